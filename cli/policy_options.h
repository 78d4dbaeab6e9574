// Flags shared by the subcommands that search or compile policies: model, machine, GPUs, batch,
// sequence length, what-if overrides.
#pragma once

#include <string>
#include <vector>

#include "cli/options.h"
#include "hwmodels/cost_model_choice.h"
#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"

namespace protwin::cli {

struct PolicyArgs {
  std::string model = "gpt2-10b";
  std::string machine = "rtx3090-server";
  int gpus = 0;                  // 0: all GPUs of the nodes
  int nodes = 0;                 // 0: one node, or as many whole nodes as --gpus fills
  std::string batch = "auto";
  int64_t seq = 0;
  std::vector<std::string> set;  // machine overrides "path=value"
  bool flash = false;
  bool hf_eager = false;
  bool no_host_dispatch = false;
  std::string profile = "none";  // --profile: a measured op profile's entries win over the curves
  std::string dtype = "fp16";
  int threads = 2;
};

// Adds --model --machine --gpus --nodes --batch --seq --set --flash --hf-eager --dtype --threads
// --no-host-dispatch --profile to `desc`.
void add_policy_options(po::options_description& desc, PolicyArgs& a);

// The resolved inputs: the machine's cost model and the --profile it prices with (null: none), the
// model, the search's options.
struct PolicyInputs : hw::ChosenCostModel<hw::HardwareCostModel> {
  sim::ModelSpec model;
  sim::offload::SearchOptions search;
};
PolicyInputs resolve_policy_inputs(const PolicyArgs& a);

// --system(s) "a,b,..." (each a known system; errors name --`flag` and the list), or "all" or "": all.
std::vector<std::string> parse_systems(const std::string& arg, const std::string& flag);

// "1.23 GiB"
std::string human_bytes(int64_t bytes);

}  // namespace protwin::cli
