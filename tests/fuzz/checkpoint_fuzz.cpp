// Fuzz target: a training checkpoint's header (runtime/train/checkpoint_header.h), as
// `protwin train --resume` reads it before the payload; needs no LibTorch.
#include <sstream>

#include "fuzz_target.h"
#include "runtime/train/checkpoint_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    std::istringstream in(text);
    protwin::rt::read_checkpoint_header(in, text.size(), "fuzz/checkpoint.bin");
  });
}
