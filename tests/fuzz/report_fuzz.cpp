// Fuzz target: a Report (protwin.report JSON) read and converted to a Chrome trace.
#include "fuzz_target.h"
#include "traces/chrome_trace.h"
#include "traces/json_reader.h"
#include "traces/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    using namespace protwin;
    const traces::JsonDocument doc = traces::JsonDocument::parse(text, "fuzz.report.json");
    const traces::Report r = traces::report_from_json(doc.json(), "fuzz.report.json");
    traces::chrome_trace(r);
    traces::report_to_string(r);
  });
}
