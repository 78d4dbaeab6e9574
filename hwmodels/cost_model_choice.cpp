#include "hwmodels/cost_model_choice.h"

#include "hwmodels/rate_cost_model.h"

namespace protwin::hw {

ChosenCostModel<HardwareCostModel> machine_cost_model(const CostModelChoice& c) {
  ChosenCostModel<HardwareCostModel> out;
  out.profile = load_op_profile(c.profile);
  out.cost = make_cost_model(load_sim_machine(c.machine, c.set, c.no_host_dispatch), out.profile.get());
  return out;
}

ChosenCostModel<CostModel> plan_cost_model(const CostModelChoice& c, const traces::Plan& plan,
                                           const std::string& plan_path) {
  ChosenCostModel<CostModel> out;
  if (!c.machine.empty()) {
    auto hardware = machine_cost_model(c);
    out.profile = std::move(hardware.profile);
    out.cost = std::move(hardware.cost);
  } else if (!c.rates.empty()) {
    out.cost = std::make_unique<RateCostModel>(RateCostModel::load(c.rates));
  } else if (plan.meta.contains("rates")) {
    out.cost = std::make_unique<RateCostModel>(RateCostModel::from_json(plan.meta["rates"], plan_path + ":/meta/rates"));
  } else {
    out.cost = std::make_unique<RateCostModel>(RateCostModel::from_json(nlohmann::json::object(), "built-in unit rates"));
  }
  return out;
}

Machine load_sim_machine(const std::string& name, const std::vector<std::string>& set, bool no_host_dispatch) {
  Machine m = load_machine(name, set);
  if (no_host_dispatch) {
    m.host_dispatch.enabled = false;
    turn_off_host_dispatch(m.json);
  }
  return m;
}

void turn_off_host_dispatch(nlohmann::json& machine_json) {
  if (machine_json.contains("host_dispatch") && machine_json["host_dispatch"].is_object()) {
    machine_json["host_dispatch"]["enabled"] = false;
  }
}

}  // namespace protwin::hw
