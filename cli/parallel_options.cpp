#include "cli/parallel_options.h"

#include <cstdarg>
#include <cstdio>

#include "cli/host_dispatch_option.h"
#include "traces/error.h"

namespace protwin::cli {

void add_parallel_options(po::options_description& desc, ParallelArgs& a) {
  desc.add_options()
      ("model", po::value(&a.model), "zoo name, spec file, or inline spec (llama:hidden=...,layers=...,heads=...)")
      ("machine", po::value(&a.machine), "node type: machine name or file (protwin machines lists them)")
      ("set", po::value(&a.set)->composing(), "override a machine field (repeatable)")
      ("seq", po::value(&a.seq)->default_value(0), "sequence length (0: the model's default)")
      ("gbs", po::value(&a.gbs), "global batch size (sequences per iteration)")
      ("recompute", po::value(&a.recompute)->default_value(a.recompute), "none | selective | full")
      ("dtype", po::value(&a.dtype)->default_value(a.dtype), "compute dtype: bf16, fp16 or fp32")
      ("gpu-memory-GB", po::value(&a.gpu_memory_gb),
       "nominal GPU memory for the 80 % rule (default: the machine's, in GiB rounded)")
      ("no-distributed-optimizer", "all-reduce gradients and replicate Adam (no ZeRO-1 sharding)")
      ("no-overlap-grad-reduce", "reduce gradients after the whole backward")
      ("no-overlap-param-gather", "gather parameters after the optimizer step")
      ("no-flash", "unfused attention (not with --cp > 1)");
  add_host_dispatch_option(desc, a.no_host_dispatch);
}

ParallelInputs resolve_parallel_inputs(const ParallelArgs& a, const po::variables_map& vm) {
  for (const char* flag : {"model", "machine", "gbs"}) require(vm, flag);
  ParallelInputs in;
  in.model = sim::resolve_model(a.model);
  in.cost = std::make_unique<hw::HardwareCostModel>(load_sim_machine(a.machine, a.set, a.no_host_dispatch));
  PROTWIN_CHECK(a.seq >= 0, "--seq ", a.seq, ": must be at least 1 (0: the model's default)");
  PROTWIN_CHECK(a.dtype == "fp16" || a.dtype == "bf16" || a.dtype == "fp32", "--dtype: expected bf16, fp16 or fp32, got '",
                a.dtype, "'");
  sim::MegatronOptions& o = in.options;
  o.seq = a.seq == 0 ? in.model.default_seq : a.seq;
  o.gbs = a.gbs;
  o.recompute = sim::parse_recompute(a.recompute);
  o.dtype = a.dtype;
  o.flash_attention = !vm.count("no-flash");
  o.distributed_optimizer = !vm.count("no-distributed-optimizer");
  o.overlap_grad_reduce = !vm.count("no-overlap-grad-reduce");
  o.overlap_param_gather = !vm.count("no-overlap-param-gather");
  if (vm.count("gpu-memory-GB")) {
    PROTWIN_CHECK(a.gpu_memory_gb > 0, "--gpu-memory-GB ", a.gpu_memory_gb, ": must be positive");
    in.gpu_memory_gb = a.gpu_memory_gb;
  }
  return in;
}

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

}  // namespace protwin::cli
