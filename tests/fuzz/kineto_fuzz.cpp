// Fuzz target: a PyTorch-profiler (Kineto) trace imported into an op profile, as
// `protwin import-kineto` does (after gunzip).
#include "fuzz_target.h"
#include "traces/json_reader.h"
#include "traces/kineto_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    using namespace protwin;
    const traces::JsonDocument doc = traces::JsonDocument::parse(text, "fuzz.trace.json");
    traces::import_kineto(doc.root(), "fuzz.trace.json", {});
  });
}
