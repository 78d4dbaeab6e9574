#include "cli/parallel_options.h"

#include "traces/error.h"
#include "traces/op_signature.h"

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
      ("no-flash", "unfused attention (not with --cp > 1)")
      ("framework", po::value(&a.framework)->default_value(a.framework),
       "code base whose switches to run: megatron-core (sequence parallel, no dropout, fp32 gradient "
       "reduction), megatron-lm (the SC'21 code: as megatron-deepspeed, plus scatter-gather pipeline sends "
       "followed by torch.cuda.synchronize(), the Float16Optimizer's passes and syncs, LocalDDP's main_grad "
       "accumulation with --no-overlap-grad-reduce), megatron-deepspeed (no sequence parallelism, dropout 0.1, "
       "fp16 runs reduce fp16 gradients, vocab-parallel loss passes, vocabulary padded to 128*TP) or fsdp "
       "(torch FSDP FULL_SHARD under composer: per-layer gathers in forward and backward and reduce-scatters "
       "every micro-batch, fp32 reduction, composer's unfused DecoupledAdamW; DP only)")
      ("sequence-parallel", po::value(&a.sequence_parallel), "on | off (overrides --framework)")
      ("dropout", po::value(&a.dropout), "on | off: hidden and attention-probability dropout (overrides --framework)")
      ("grad-reduce-dtype", po::value(&a.grad_reduce_dtype), "fp32 | fp16 | bf16: dtype of the gradient "
       "reduction (overrides --framework)")
      ("vocab-parallel-loss", po::value(&a.vocab_parallel_loss),
       "on | off: Megatron's vocab-parallel cross-entropy as its passes (overrides --framework)")
      ("pad-vocab", po::value(&a.pad_vocab), "on | off: vocabulary padded to a multiple of 128*TP (overrides --framework)")
      ("p2p-scatter-gather", po::value(&a.p2p_scatter_gather),
       "on | off: pipeline sends of 1/TP slices, all-gathered over TP on receipt (overrides --framework)")
      ("p2p-sync", po::value(&a.p2p_sync),
       "on | off: the host waits for every pipeline send (torch.cuda.synchronize(); overrides --framework)")
      ("framework-step", po::value(&a.framework_step),
       "on | off: the optimizer step as the framework's code does it (Megatron-LM's Float16Optimizer passes "
       "and synced all-reduces; with fsdp composer's unfused DecoupledAdamW and clipping) instead of the "
       "machine's fused device Adam (overrides --framework)")
      ("bias-passes", po::value(&a.bias_passes),
       "on | off: the separate QKV bias add and bias-gradient reductions of Megatron-LM SC'21 and "
       "Megatron-DeepSpeed (overrides --framework)")
      ("local-ddp", po::value(&a.local_ddp),
       "on | off: Megatron's LocalDDP adds every gradient into main_grad after each backward (overrides "
       "--framework)")
      ("fsdp-passes", po::value(&a.fsdp_passes),
       "on | off: FSDP's own elementwise passes: the low-precision shard cast before every gather, the "
       "gradient cast to the reduce dtype, its pre- and post-division, the shard's cast back and "
       "accumulation (torch 2.1 fsdp/_runtime_utils.py; on with --framework fsdp)");
  add_cost_options(desc, a.no_host_dispatch, a.profile);
}

namespace {

// An on|off flag given by the user overrides the preset's value.
void on_off(const po::variables_map& vm, const char* flag, const std::string& value, bool& target) {
  if (!vm.count(flag)) return;
  PROTWIN_CHECK(value == "on" || value == "off", "--", flag, ": expected on or off, got '", value, "'");
  target = value == "on";
}

}  // namespace

ParallelInputs resolve_parallel_inputs(const ParallelArgs& a, const po::variables_map& vm) {
  for (const char* flag : {"model", "machine", "gbs"}) require(vm, flag);
  const sim::ModelSpec model = sim::resolve_model(a.model);  // an unknown model is said before a bad machine
  ParallelInputs in{hw::machine_cost_model({a.machine, a.set, a.no_host_dispatch, a.profile, ""}), model, {}};
  PROTWIN_CHECK(a.dtype == "fp16" || a.dtype == "bf16" || a.dtype == "fp32", "--dtype: expected bf16, fp16 or fp32, got '",
                a.dtype, "'");
  sim::parallel::MegatronOptions& o = in.options;
  o.seq = a.seq == 0 ? in.model.default_seq : a.seq;
  o.gbs = a.gbs;
  o.recompute = sim::parallel::parse_recompute(a.recompute);
  o.dtype = a.dtype;
  o.flash_attention = !vm.count("no-flash");
  o.distributed_optimizer = !vm.count("no-distributed-optimizer");
  o.overlap_grad_reduce = !vm.count("no-overlap-grad-reduce");
  o.overlap_param_gather = !vm.count("no-overlap-param-gather");
  sim::parallel::apply_framework_preset(o, a.framework);
  on_off(vm, "sequence-parallel", a.sequence_parallel, o.sequence_parallel);
  on_off(vm, "dropout", a.dropout, o.dropout);
  on_off(vm, "vocab-parallel-loss", a.vocab_parallel_loss, o.vocab_parallel_loss);
  on_off(vm, "pad-vocab", a.pad_vocab, o.pad_vocab);
  on_off(vm, "p2p-scatter-gather", a.p2p_scatter_gather, o.p2p_scatter_gather);
  on_off(vm, "p2p-sync", a.p2p_sync, o.p2p_sync);
  on_off(vm, "framework-step", a.framework_step, o.framework_step);
  on_off(vm, "local-ddp", a.local_ddp, o.local_ddp);
  on_off(vm, "bias-passes", a.bias_passes, o.bias_passes);
  on_off(vm, "fsdp-passes", a.fsdp_passes, o.fsdp_passes);
  if (vm.count("grad-reduce-dtype")) {
    const std::string& g = a.grad_reduce_dtype;
    PROTWIN_CHECK(g == "fp32" || g == "fp16" || g == "bf16", "--grad-reduce-dtype: expected fp32, fp16 or bf16, got '",
                  g, "'");
    o.grad_bytes = traces::dtype_bytes(g);
  }
  PROTWIN_CHECK(!vm.count("gpu-memory-GB") || a.gpu_memory_gb > 0, "--gpu-memory-GB ", a.gpu_memory_gb,
                ": must be positive");
  return in;
}

}  // namespace protwin::cli
