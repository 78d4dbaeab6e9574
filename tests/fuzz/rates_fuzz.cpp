// Fuzz target: a rates file (protwin.rates JSON, `simulate --rates`), then the example plan
// simulated with it.
#include "fuzz_target.h"
#include "hwmodels/rate_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "traces/json_reader.h"
#include "traces/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace protwin;
  static const traces::Plan plan = traces::read_plan(PROTWIN_SOURCE_DIR "/examples/prefetch_pipeline.plan.json");
  return fuzz::fuzz_one(data, size, [](const std::string& text) {
    const traces::JsonDocument doc = traces::JsonDocument::parse(text, "fuzz.rates.json");
    const hw::RateCostModel rates = hw::RateCostModel::from_json(doc.json(), "fuzz.rates.json");
    sim::PlanSimulator(rates).run(plan);
  });
}
