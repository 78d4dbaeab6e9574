// The cost-model flags of the simulating subcommands (--no-host-dispatch, --profile); what they
// choose: hwmodels/cost_model_choice.h.
#pragma once

#include <string>

#include "cli/options.h"

namespace protwin::cli {

// The cost-model flags of every subcommand that simulates with a machine. --no-host-dispatch: no
// host thread issues the GPU work (the machine's host_dispatch section is turned off), which gives
// the predictions of the simulator before host dispatch (DESIGN §4). --profile: a measured op
// profile (shipped name or file, hw::load_op_profile) whose entries win over the machine's curves.
void add_cost_options(po::options_description& desc, bool& no_host_dispatch, std::string& profile);

}  // namespace protwin::cli
