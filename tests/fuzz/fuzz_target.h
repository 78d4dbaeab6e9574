// Shared by the fuzz targets (tests/fuzz/*_fuzz.cpp): each defines LLVMFuzzerTestOneInput and
// feeds the input to one reader through fuzz_one. A user error (protwin::Error of kind user, what
// the CLI turns into exit 2 with a message) is the expected answer to bad input; an internal
// error, any other exception, or a crash is a finding: it aborts, so libFuzzer (or the corpus
// replay in CTest) reports the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "traces/error.h"

namespace protwin::fuzz {

template <typename Read>
int fuzz_one(const uint8_t* data, size_t size, Read read) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    read(text);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUser) return 0;
    std::fprintf(stderr, "fuzz: internal error on bad input: %s\n", e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: uncaught exception on bad input: %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace protwin::fuzz
