// Fuzz target: a model spec, as a JSON file or (input without '{' first) an inline spec such as
// "gpt:hidden=1024,layers=24,heads=16", then its workload at batch 1 and the model's sequence.
#include "fuzz_target.h"
#include "sim/workload/model_spec.h"
#include "sim/workload/workload.h"
#include "traces/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    using namespace protwin;
    sim::ModelSpec m;
    if (!text.empty() && text[0] == '{') {
      m = sim::model_from_json(traces::JsonDocument::parse(text, "fuzz.model.json").json(), "fuzz.model.json");
    } else {
      // Only what resolve_model takes as inline (it would read a file or a zoo name otherwise).
      if (text.find(':') == std::string::npos || text.find('=') == std::string::npos ||
          text.find('/') != std::string::npos)
        return;
      m = sim::resolve_model(text);
    }
    sim::WorkloadOptions o;
    o.batch = 1;
    sim::build_workload(m, o);
  });
}
