// Fuzz target: a Plan (protwin.plan JSON) read, validated and simulated at unit rates, as
// `protwin simulate --plan` does.
#include "fuzz_target.h"
#include "hwmodels/rate_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "traces/json_reader.h"
#include "traces/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    using namespace protwin;
    const traces::JsonDocument doc = traces::JsonDocument::parse(text, "fuzz.plan.json");
    const traces::Plan plan = traces::plan_from_json(doc.json(), "fuzz.plan.json");
    traces::validate(plan);
    const hw::RateCostModel rates = hw::RateCostModel::from_json(nlohmann::json::object(), "built-in unit rates");
    sim::PlanSimulator(rates).run(plan);
  });
}
