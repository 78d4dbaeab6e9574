// The Megatron-LM-style plan compiler: one training iteration of 4D-parallel (DP, TP with
// sequence parallelism, PP, CP) training as a traces::Plan (DESIGN §3), run by the same
// PlanSimulator, Report and Chrome trace as the offload plans.
//
// Rank classes. Ranks of one TP, CP or DP group do the same work at the same time, so ONE rank
// per pipeline stage is simulated (the p stages differ: the first holds the embedding, the last
// the LM head and loss, and they are shifted in time by the schedule). A collective is one op of
// that rank whose cost is the whole collective's time over its group (Op::group: ranks,
// ranks_per_node, scope from the placement; work.bytes = the full buffer S, NCCL-tests
// convention). Per stage s the streams are
//   stage<s>.compute  forward / backward / recompute ops, the TP collectives on the critical path
//                     (sequence-parallel all-gather before column-parallel GEMMs, reduce-scatter
//                     after row-parallel ones, the all-gather of the output gradient before a
//                     row-parallel backward) and the optimizer step (adam_device);
//   stage<s>.tp_comm  the TP collectives Megatron overlaps in backward: the all-gather of a
//                     column-parallel layer's input for its weight gradient (during dX) and the
//                     reduce-scatter of dX (during dW);
//   stage<s>.cp_comm  the context-parallel ring: CP-1 send_recv steps of a K/V block, each
//                     overlapped with one attention step (double buffered); backward sends K/V and
//                     dK/dV (2x) and finally returns dK/dV to its owner;
//   stage<s>.dp_comm  gradient buckets (reduce-scatter with the distributed optimizer, else
//                     all-reduce, over DP x CP) as the last micro-batch's backward completes them
//                     (overlap_grad_reduce), the parameter all-gather of the distributed optimizer
//                     (overlap_param_gather: before each bucket's first forward; else after the
//                     step), and the tied-embedding all-reduce between first and last stage;
//   stage<s>.p2p      send_recv of activations (forward) and their gradients (backward) to the
//                     next / previous stage; the receiving stage's pass depends on it.
// Schedule: pipeline_schedule.h (1F1B, or interleaved with vpp > 1); micro-batches
// m = GBS / (MBS * DP). Recompute: none; selective (the attention core's forward runs again just
// before its backward, CP ring included); full (each layer's whole forward, with its TP
// collectives and CP ring, runs again before its backward).
//
// Granularity: per (micro-batch, layer, phase) one compute op per piece between two
// collectives (one op per layer without TP and CP), its kernels (sim/workload, sharded by tp and
// cp) a kernel set of the plan (Op::kernels; the cost model prices each set once). Every op
// carries what prices it (collectives and sends their group: ranks, ranks_per_node, scope); with
// describe_ops also its descriptive attrs (block, part, group, what). The plan has no memory
// pools: the memory of a 4D layout comes from the estimator (sim/parallel/estimator).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/engine/plan_simulator.h"
#include "sim/parallel/estimator/stage_layers.h"
#include "sim/parallel/compiler/placement.h"
#include "sim/workload/model_spec.h"
#include "traces/plan.h"

namespace protwin::sim::parallel {

struct MegatronOptions {
  ParallelSizes sizes;
  int64_t mbs = 1;
  int64_t gbs = 0;
  int64_t seq = 0;                   // 0: the model's default_seq
  int vpp = 1;                       // model chunks per stage (interleaved 1F1B when > 1)
  StageSplit split;                  // uneven first/last stages (vpp 1 only; stage_layers.h)
  Recompute recompute = Recompute::kNone;
  std::string dtype = "bf16";
  bool flash_attention = true;
  bool distributed_optimizer = true; // reduce-scatter grads, shard Adam over DP x CP, gather params
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  int64_t bucket_params = 0;         // gradient bucket size; 0: Megatron's max(40M, 1M * DP*CP)
  int grad_bytes = 4;                // main gradients reduced in fp32 (Megatron with bf16)
  // What older code bases ran (framework_preset sets them as each does):
  bool sequence_parallel = true;     // false: TP all-reduces after row-parallel GEMMs (forward) and
                                     // after column-parallel ones (backward), norms and residual
                                     // work replicated over the TP ranks
  bool dropout = false;              // hidden and attention-probability dropout (p > 0)
  bool vocab_parallel_loss = false;  // Megatron's vocab-parallel cross-entropy as its passes
  bool pad_vocab = false;            // vocabulary padded to a multiple of 128 * TP (Megatron's
                                     // _vocab_size_with_padding, --make-vocab-size-divisible-by 128)
  bool bias_passes = false;          // the separate QKV bias add and bias-gradient reductions of
                                     // Megatron-LM SC'21 and Megatron-DeepSpeed (WorkloadOptions)
  // Megatron-LM at the SC'21 commit (megatron/p2p_communication.py, optimizer/optimizer.py):
  bool p2p_scatter_gather = false;   // each TP rank sends 1/TP of the activation, the receiver
                                     // all-gathers it over TP (--scatter-gather-tensors-in-pipeline)
  bool p2p_sync = false;             // torch.cuda.synchronize() after every batch_isend_irecv: the
                                     // host (and so the next kernels) waits for the exchange
  bool local_ddp = false;            // LocalDDP (--DDP-impl local): main_grad += grad after every
                                     // backward (model/distributed.py _make_param_hook)
  bool framework_step = false;       // the optimizer step as the framework's code does it, not the
                                     // machine's fused device Adam: with fsdp composer's unfused
                                     // DecoupledAdamW after FSDP's clip_grad_norm_, else Megatron-LM's
                                     // Float16OptimizerWithFloat16Params.step (grads copied to fp32
                                     // main grads, unscaled with an inf check (fp16: all-reduce +
                                     // .item()), grad norm (all-reduce + .item()), params copied back)
  // torch FSDP FULL_SHARD as composer runs it (llm-foundry's MPT runs; DP only): every micro-batch
  // all-gathers each decoder layer's parameters before its forward and again before its backward
  // and reduce-scatters its gradient after (grad_bytes); the root unit (embedding, head) is
  // gathered once per micro-batch; limit_all_gathers keeps at most two layers gathered ahead.
  bool fsdp = false;
  bool fsdp_passes = false;          // FSDP's own elementwise passes (fsdp_pass_bytes): the low-precision
                                     // shard cast before every gather, the gradient's cast to the
                                     // reduce dtype, its pre- and post-division, the shard's cast back
                                     // and accumulation (torch 2.1 fsdp/_runtime_utils.py)
  bool describe_ops = false;          // ops carry their descriptive attrs (plan files)
};

// torch FSDP's gradient pre-divide factor for `world` ranks (torch 2.1
// fsdp/_init_utils.py _get_gradient_predivide_factor): f = 1, doubled while world % f == 0 and
// world / f > f. The post-divide factor is world / f (a float: 1.5 for 6 ranks).
int64_t fsdp_predivide_factor(int64_t world);

// Bytes FSDP's own elementwise passes move for one unit of `params` unsharded elements over
// `world` ranks, parameters in `param_bytes` (the compute dtype) and gradients reduced in
// `reduce_bytes` (torch 2.1 fsdp/_runtime_utils.py; sharded parameters and the optimizer in fp32):
//  - shard_cast: _use_low_precision_shard before each all-gather, the fp32 shard copied into the
//    low-precision shard (read 4, write param_bytes per shard element); 0 without mixed precision;
//  - post_backward: the unsharded flat gradient assembled by autograd from the gradients of the
//    views the unit's modules used (flat_param.py _get_unflat_views: torch.split + view;
//    derivatives.yaml split_with_sizes -> split_with_sizes_backward, a cat: read and write
//    param_bytes per element), then _post_backward_hook on the post-backward stream: the unsharded gradient cast
//    to the reduce dtype when it differs (read param_bytes, write reduce_bytes), _div_if_needed by
//    the pre-divide factor (read and write), and after the reduce-scatter the shard's post-divide
//    (read and write), _cast_grad_to_param_dtype back to fp32 when reduced in low precision, and
//    _accumulate_sharded_grad's += into _saved_grad_shard after the first micro-batch (read two,
//    write one, fp32).
struct FsdpPassBytes {
  double shard_cast = 0;
  double post_backward = 0;
};
FsdpPassBytes fsdp_pass_bytes(int64_t params, int64_t world, int param_bytes, int reduce_bytes, bool accumulate);

// Sets the switches of `o` as the code base `framework` ran them: "megatron-core" (today's
// Megatron-Core defaults: sequence parallelism, no dropout, fp32 gradient reduction, one fused
// loss kernel, unpadded vocabulary: nothing changes), "megatron-lm" (Megatron-LM at the SC'21
// commit, examples/sc21), "megatron-deepspeed" (microsoft/Megatron-DeepSpeed) or "fsdp" (torch FSDP
// FULL_SHARD under composer, as llm-foundry ran its MPT benchmarks). Needs o.dtype.
// An unknown name is an error naming --framework.
void apply_framework_preset(MegatronOptions& o, const std::string& framework);

// With o.fsdp, refuses TP, PP or CP > 1 naming --framework (FSDP FULL_SHARD is data parallel only).
void check_fsdp_layout(const MegatronOptions& o);

// What the simulated rank of one stage does.
struct StageInfo {
  std::string compute_stream;
  int64_t layers = 0;                // decoder layers on this stage (all chunks)
  int64_t params = 0;                // this rank's parameters (TP-sharded)
  double matmul_flops = 0;           // GEMM + attention flops of forward and backward ops
  double recompute_matmul_flops = 0; // the same of recompute ops
};

struct ParallelPlan {
  traces::Plan plan;
  Placement placement;
  MegatronOptions options;            // seq resolved
  int64_t microbatches = 0;
  double model_flops_per_token = 0;   // model_flops_per_token() of the model at this seq
  std::vector<StageInfo> stages;
};

// The largest plan the compiler builds (about 600 bytes per op when materialised, more with
// describe_ops; a MegatronOpStream holds only its stages' in-flight ops, but the simulation's time still
// grows with the plan): a bigger one is refused naming --gbs (its micro-batches set the plan's
// length).
inline constexpr int64_t kMaxPlanOps = int64_t{1} << 22;

// Layers, heads and sizes must already satisfy the layout's constraints (the CLI checks them
// with the estimator's messages); the compiler re-checks what it relies on.
ParallelPlan compile_megatron_plan(const ModelSpec& model, const MegatronOptions& options,
                                   const Placement& placement, const nlohmann::json& meta = {});

// The same plan's ops generated as a simulation takes them (PlanSimulator::run with an
// OpSource): the same ops, ids and kernel sets, but only the ops generated and not yet released are
// held, so a simulation's memory follows the pipeline's in-flight work, not the plan's length nor
// the number of stages. A skeleton numbers the plan in compile order without building ops (a few
// ids per task it is ahead); each stage builds its own ops with those ids as the run needs them:
// its first task before the run; its next task when an op of its task before starts, or when its
// host thread has issued every op built; its tail (gradient reductions, tied embedding, optimizer
// step) when its second-to-last task starts. That is in time: every op of a task waits for an op
// of its own task or for its stage's last compute op of the task before (the compute stream's
// order, kPrevCompute, last_compute), and a stage's first task for the previous stage's send and
// its gathers, emitted before the run. A send another stage has not built yet (and the tied
// embedding's all-reduce between the first and last stage) is a dependency by id that the run
// waits for until it is generated (generated()). The framework's ops (apply_framework_preset) keep
// to it: scatter-gather's all-gather and LocalDDP's main_grad passes are ops of their task, FSDP's
// gathers and reduce-scatters too (the last layer's backward gather waits for the forward task's
// last compute op), the framework step's all-reduces are the tail's.
// With id_order, next() hands out every op in id order instead (compile_megatron_plan, a plan
// written as it is generated); no run drives it.
class MegatronOpStream : public OpSource {
 public:
  // The plan without ops (its kernel sets all there): placement, options, micro-batches, model
  // flops, and the stages, whose flops are complete once every op is generated.
  virtual const ParallelPlan& plan() const = 0;
};
std::unique_ptr<MegatronOpStream> megatron_op_stream(const ModelSpec& model, const MegatronOptions& options,
                                                     const Placement& placement, const nlohmann::json& meta = {},
                                                     bool id_order = false);

// Model flops of one token: 3x the forward GEMM and attention flops of the unsharded workload
// (backward = 2x forward; elementwise work, recompute and causal masking not counted). For GPT
// this is Narayanan et al.'s 72 h^2 L (1 + s/6h + V/12Lh) per token, i.e. their
// 96 B s L h^2 (1 + s/6h + V/16Lh) without the recomputed forward.
double model_flops_per_token(const ModelSpec& model, int64_t seq, const std::string& dtype);

}  // namespace protwin::sim::parallel
