// The cost model a simulation runs with, chosen from what the simulating subcommands are given
// (issue 17; DESIGN §5): a machine (field overrides, host dispatch on or off) priced with a
// measured op profile, or, for a plan without a machine, per-stream rates.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/cost_model.h"
#include "hwmodels/hardware_cost_model.h"
#include "traces/op_profile.h"
#include "traces/plan.h"

namespace protwin::hw {

struct CostModelChoice {
  std::string machine;               // name or file ("": none)
  std::vector<std::string> set;      // machine field overrides, path=value
  bool no_host_dispatch = false;     // the machine's host_dispatch section off (DESIGN §4.1)
  std::string profile = "none";      // load_op_profile's name or file
  std::string rates;                 // a protwin.rates file, for a plan without a machine
};

// A cost model and the op profile it reads (kept together: the model points into the profile).
template <class Model>
struct ChosenCostModel {
  std::unique_ptr<const traces::OpProfile> profile;  // null: none
  std::unique_ptr<Model> cost;
};

// The machine's hardware model, the profile's entries winning (make_cost_model).
ChosenCostModel<HardwareCostModel> machine_cost_model(const CostModelChoice& c);
// A plan's: the machine's when c.machine is given, else c.rates, else the plan's meta.rates
// (named by `plan_path`), else built-in unit rates.
ChosenCostModel<CostModel> plan_cost_model(const CostModelChoice& c, const traces::Plan& plan,
                                           const std::string& plan_path);

// Host dispatch off in a raw machine document (sweep applies its axes to it).
void turn_off_host_dispatch(nlohmann::json& machine_json);

}  // namespace protwin::hw
