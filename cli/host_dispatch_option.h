// The --no-host-dispatch flag of the simulating subcommands (DESIGN §4, host dispatch).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "hwmodels/machine.h"

namespace protwin::cli {

// The cost-model flags of every subcommand that simulates with a machine. --no-host-dispatch: no
// host thread issues the GPU work (the machine's host_dispatch section is turned off), which gives
// the predictions of the simulator before host dispatch (DESIGN §4). --profile: a measured op
// profile (shipped name or file, hw::load_op_profile) whose entries win over the machine's curves.
void add_cost_options(po::options_description& desc, bool& no_host_dispatch, std::string& profile);
// load_machine, with host dispatch turned off when `no_host_dispatch`.
hw::Machine load_sim_machine(const std::string& name, const std::vector<std::string>& set, bool no_host_dispatch);
// The same on a raw machine document (sweep applies its axes to it).
void turn_off_host_dispatch(nlohmann::json& machine_json);

}  // namespace protwin::cli
