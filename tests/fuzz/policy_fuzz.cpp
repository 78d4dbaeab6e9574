// Fuzz target: a policy file (knobs JSON, `simulate --policy`), its knobs checked and compiled
// into a plan of gpt2-tiny on one GPU of host-emulated, as `protwin simulate --model` does.
#include "fuzz_target.h"
#include "hwmodels/machine.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"
#include "sim/workload/workload.h"
#include "traces/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace protwin;
  static const sim::Workload w = [] {
    sim::WorkloadOptions o;
    o.batch = 2;
    o.seq = 64;
    return sim::build_workload(sim::find_model("gpt2-tiny"), o);
  }();
  static const hw::Machine m = hw::load_machine("host-emulated", {});
  return fuzz::fuzz_one(data, size, [](const std::string& text) {
    const traces::JsonDocument doc = traces::JsonDocument::parse(text, "fuzz.policy.json");
    const sim::offload::OffloadKnobs k = sim::offload::knobs_from_json(doc.json(), "fuzz.policy.json");
    sim::offload::compile_offload_plan(w, 1, sim::offload::rank_memory(m, 1), k, nlohmann::json::object());
  });
}
