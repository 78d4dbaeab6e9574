// Flags shared by `protwin simulate-4d` and `protwin search-4d`: model, machine and overrides,
// sequence, global batch, recompute, dtype, the Megatron switches and the GPU memory for the
// 80 % rule.
#pragma once

#include <string>
#include <vector>

#include "cli/options.h"
#include "hwmodels/cost_model_choice.h"
#include "sim/parallel/compiler/megatron_compiler.h"
#include "sim/workload/model_spec.h"

namespace protwin::cli {

struct ParallelArgs {
  std::string model, machine;
  std::vector<std::string> set;
  bool no_host_dispatch = false;
  std::string profile = "none";  // --profile
  int64_t seq = 0, gbs = 0;
  std::string recompute = "none", dtype = "bf16";
  std::string framework = "megatron-core", sequence_parallel, dropout, grad_reduce_dtype, vocab_parallel_loss, pad_vocab;
  std::string p2p_scatter_gather, p2p_sync, framework_step, local_ddp, bias_passes, fsdp_passes;  // on | off overrides of --framework
  double gpu_memory_gb = 0;  // --gpu-memory-GB; 0: the machine's, in GiB rounded
};

void add_parallel_options(po::options_description& desc, ParallelArgs& a);

// The machine's cost model and the --profile it prices with (null: none), the model, the options.
struct ParallelInputs : hw::ChosenCostModel<hw::HardwareCostModel> {
  sim::ModelSpec model;
  sim::parallel::MegatronOptions options;  // sizes, mbs and vpp left for the caller
};

// Requires --model, --machine and --gbs.
ParallelInputs resolve_parallel_inputs(const ParallelArgs& a, const po::variables_map& vm);

}  // namespace protwin::cli
