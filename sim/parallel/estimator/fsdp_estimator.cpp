// torch FSDP FULL_SHARD's model-state memory per GPU, as torch 2.0/2.1 allocates it (the torch of
// composer 0.16 under llm-foundry's MPT benchmarks; files of pytorch/pytorch v2.0.0):
//
// - Sharded, for the whole step: every FSDP unit is one FlatParameter, padded to a multiple of the
//   world size and cut into equal shards (torch/distributed/fsdp/flat_param.py
//   FlatParamHandle._get_shard: numel_to_pad = world_size * chunks[0].numel() - numel). The shard
//   keeps the module's dtype (fp32: composer builds the model in fp32), its gradient
//   `_saved_grad_shard` is cast back to it (_runtime_utils.py _post_backward_hook,
//   _cast_grad_to_param_dtype), Adam's exp_avg and exp_avg_sq live on the shard: 4 + 4 + 8 bytes
//   per sharded element.
// - Unsharded, a few units at a time (MixedPrecision.param_dtype, `fsdp_param_bytes`):
//   * the root unit (embedding, LM head, final norm) stays gathered from forward to backward
//     (_post_forward_reshard frees only `not state._is_root`), and its gradient, begun by the LM
//     head at the start of backward, lives to the end of backward;
//   * forward: limit_all_gathers lets at most 2 frees be in flight (_limiter_utils.py
//     _FreeEventQueue._max_num_inflight_all_gathers = 2; _unshard waits for the oldest before the
//     next all-gather): the unit computing and the one gathered ahead; each all-gather also needs
//     the unit's low-precision shard `_mp_shard` (flat_param.py _use_low_precision_shard);
//   * backward: the unit computing (parameters, gathered by the previous unit's BACKWARD_POST
//     prefetch, and its unsharded gradient) while the previous unit's gradient is reduce-scattered
//     on the post_backward stream: its gradient in param dtype (kept by record_stream), its copy in
//     the reduce dtype when that differs (`flat_param.grad.to(handle._reduce_dtype)`) and the
//     padded output shard (`torch.empty_like(chunks[0])`);
//   * the root's own post-backward at the end: its parameters, gradient, reduce-dtype copy, shard.
//   The peak is the largest of these three moments.
// Activations are not FSDP's business: the dispatcher adds Fujii et al.'s (SwiGLU models) or
// Korthikanti et al.'s (GeLU models), at TP = CP = PP = 1.
#include <algorithm>

#include "sim/parallel/estimator/estimate_methods.h"

namespace protwin::sim::parallel::estimate_detail {

void fsdp_model_states(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out) {
  const int64_t d = c.dp;
  const auto shard = [d](int64_t numel) { return static_cast<double>((numel + d - 1) / d); };
  const int64_t unit = (transformer_parameter_count(m) - m.hidden) / m.layers;  // one decoder layer
  const int64_t root = out.params_total - m.layers * unit;  // embedding(s), final norm
  const double n = static_cast<double>(unit), r = static_cast<double>(root);
  const double pb = o.fsdp_param_bytes;
  const double rb = o.fp32_grad_accum ? 4.0 : 2.0;
  const double cast = rb != pb ? rb : 0.0;  // the gradient's copy in the reduce dtype

  const double sharded_elems = static_cast<double>(m.layers) * shard(unit) + shard(root);
  const double sharded = 16.0 * sharded_elems;  // fp32 param, fp32 grad, Adam exp_avg, exp_avg_sq
  const double forward = pb * r + 2 * pb * n + pb * shard(unit);
  const double backward = 2 * pb * r + 3 * pb * n + cast * n + rb * shard(unit) + pb * shard(unit);
  const double root_reduce = 2 * pb * r + cast * r + rb * shard(root);
  out.fsdp_gathered_bytes = std::max({forward, backward, root_reduce});
  out.params_per_gpu = sharded_elems;
  out.weights_grads_optimizer_bytes = sharded + out.fsdp_gathered_bytes;
  out.bytes_per_param = out.weights_grads_optimizer_bytes / sharded_elems;
  out.notes.push_back("fsdp: FULL_SHARD, one unit per decoder layer plus the root; 16 bytes per sharded element, "
                      "the gathered units' peak of forward, backward and the root's reduce-scatter on top");
}

}  // namespace protwin::sim::parallel::estimate_detail
