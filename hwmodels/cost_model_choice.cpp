#include "hwmodels/cost_model_choice.h"

#include "hwmodels/rate_cost_model.h"

namespace protwin::hw {

ChosenCostModel<HardwareCostModel> machine_cost_model(const CostModelChoice& c) {
  ChosenCostModel<HardwareCostModel> out;
  out.profile = load_op_profile(c.profile);
  Machine m = load_machine(c.machine, c.set);
  if (c.no_host_dispatch) {
    m.host_dispatch.enabled = false;
    turn_off_host_dispatch(m.json);
  }
  out.cost = make_cost_model(std::move(m), out.profile.get());
  if (out.profile) out.cost->set_contention(contention_rules_from_profile(out.profile->provenance()));
  return out;
}

ChosenCostModel<CostModel> plan_cost_model(const CostModelChoice& c, const traces::Plan& plan,
                                           const std::string& plan_path) {
  if (!c.machine.empty()) {
    auto hardware = machine_cost_model(c);
    return {std::move(hardware.profile), std::move(hardware.cost)};
  }
  if (!c.rates.empty()) return {nullptr, std::make_unique<RateCostModel>(RateCostModel::load(c.rates))};
  if (plan.meta.contains("rates"))
    return {nullptr, std::make_unique<RateCostModel>(RateCostModel::from_json(plan.meta["rates"], plan_path + ":/meta/rates"))};
  return {nullptr, std::make_unique<RateCostModel>(RateCostModel::from_json(nlohmann::json::object(), "built-in unit rates"))};
}

void turn_off_host_dispatch(nlohmann::json& machine_json) {
  if (machine_json.contains("host_dispatch") && machine_json["host_dispatch"].is_object())
    machine_json["host_dispatch"]["enabled"] = false;
}

}  // namespace protwin::hw
