#include "sim/policy/analytic_model.h"

#include "sim/policy/offload_compiler.h"

#include <algorithm>

namespace protwin::sim {

namespace {
double kernels_s(const std::vector<traces::Kernel>& ks, const hw::HardwareCostModel& cost, bool backward) {
  double t = 0;
  for (const auto& k : ks) t += static_cast<double>(k.count) * cost.kernel_seconds(k, backward);
  return t;
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

WorkloadTimes workload_times(const Workload& w, const ChunkLayout& layout, const hw::HardwareCostModel& cost,
                             int gpus) {
  WorkloadTimes t;
  t.gpus = gpus;
  const size_t nb = w.blocks.size();
  t.layer_block.assign(static_cast<size_t>(w.model.layers), -1);
  for (size_t b = 0; b < nb; ++b) {
    const Block& bl = w.blocks[b];
    t.fwd_s.push_back(kernels_s(bl.forward, cost, false));
    t.bwd_s.push_back(kernels_s(bl.backward, cost, true));
    t.rec_s.push_back(kernels_s(bl.recompute, cost, false));
    t.swap_s.push_back(cost.copy_seconds(static_cast<double>(bl.saved_bytes), hw::CopyDirection::kD2H, true, false));
    t.saved.push_back(bl.saved_bytes);
    t.ckpt.push_back(bl.checkpoint_bytes);
    t.fwd_transient.push_back(bl.forward_transient_bytes);
    t.bwd_transient.push_back(bl.backward_transient_bytes);
    if (bl.layer >= 0) t.layer_block[static_cast<size_t>(bl.layer)] = static_cast<int>(b);
  }
  const int64_t n = gpus;
  const int ranks_on_host = std::min(gpus, std::max(1, cost.machine().gpu.count));
  for (const auto& c : layout.chunks) {
    const int64_t used = c.used_elems * layout.bytes_per_elem;
    const int64_t shard = ceil_div(used, n);
    const double params = static_cast<double>(ceil_div(c.used_elems, n));
    double fetch = cost.copy_seconds(static_cast<double>(shard), hw::CopyDirection::kH2D, true, false);
    double grad = cost.copy_seconds(static_cast<double>(shard), hw::CopyDirection::kD2H, true, false);
    if (gpus > 1) {
      fetch += cost.collective_seconds(hw::CollectiveKind::kAllGather, static_cast<double>(used), gpus);
      grad += cost.collective_seconds(hw::CollectiveKind::kReduceScatter, static_cast<double>(used), gpus);
    }
    t.fetch_s.push_back(fetch);
    t.upload_s.push_back(fetch);
    t.grad_s.push_back(grad);
    t.grad_roundtrip_s.push_back(cost.copy_seconds(static_cast<double>(shard), hw::CopyDirection::kH2D, true, false) +
                                 cost.copy_seconds(static_cast<double>(shard), hw::CopyDirection::kD2H, false, false) +
                                 cost.host_cast_seconds(static_cast<double>(shard + shard * 4 / layout.bytes_per_elem),
                                                          ranks_on_host));
    t.adam_cpu_s.push_back(cost.cpu_adam_seconds(params, ranks_on_host));
    t.adam_torch_s.push_back(cost.cpu_adam_seconds(params, ranks_on_host) * cost.machine().cpu_adam.torch_slowdown);
    t.adam_gpu_s.push_back(cost.device_adam_seconds(params));
    t.step_pass_s.push_back(
        cost.host_pass_seconds("overflow_scan", params * static_cast<double>(kStepScanBytesPerParam), params, ranks_on_host) +
        cost.host_pass_seconds("unscale", params * static_cast<double>(kStepUnscaleBytesPerParam), params, ranks_on_host) +
        cost.host_pass_seconds("fp16_copy", params * static_cast<double>(kStepCopyBytesPerParam), params, ranks_on_host));
    t.chunk_first_block.push_back(c.first_block);
    t.chunk_last_block.push_back(c.last_block);
  }
  t.chunk_bytes = layout.chunk_bytes;
  t.state_sizes = chunk_state_sizes(layout, n);
  t.optim_bytes_per_param = optimizer_bytes_per_param(w.options.dtype);
  t.fragmentation = cost.machine().gpu.allocator.fragmentation_fraction;
  return t;
}

AnalyticEstimate analytic_estimate(const WorkloadTimes& t, const OffloadKnobs& k,
                                   const std::vector<ActMode>& layer_modes) {
  AnalyticEstimate e;
  const size_t nb = t.fwd_s.size();
  const int n_chunks = static_cast<int>(t.fetch_s.size());
  const int64_t n = t.gpus;
  std::vector<ActMode> mode(nb, ActMode::kNone);
  for (size_t l = 0; l < layer_modes.size(); ++l) mode[static_cast<size_t>(t.layer_block[l])] = layer_modes[l];
  auto persistent = [&](int c) { return !k.offload || c < k.n_persist; };

  // Which chunks are fetched again in backward: all non-persistent ones except the last
  // n_buffer (buffer reuse).
  int n_nonpersistent = 0;
  for (int c = 0; c < n_chunks; ++c) n_nonpersistent += persistent(c) ? 0 : 1;
  const int kept = k.buffer_reuse ? std::min(k.n_buffer, n_nonpersistent) : 0;

  // Forward.
  std::vector<double> fetch_at(nb, 0), comm_bwd(nb, 0), blocking_bwd(nb, 0);
  int seen_nonpersistent = 0;
  for (int c = 0; c < n_chunks; ++c) {
    if (persistent(c)) continue;
    const size_t first = static_cast<size_t>(t.chunk_first_block[static_cast<size_t>(c)]);
    const size_t last = static_cast<size_t>(t.chunk_last_block[static_cast<size_t>(c)]);
    fetch_at[first] += t.fetch_s[static_cast<size_t>(c)];
    const bool refetch = seen_nonpersistent < n_nonpersistent - kept;
    ++seen_nonpersistent;
    if (refetch) comm_bwd[last] += t.fetch_s[static_cast<size_t>(c)];
    comm_bwd[first] += t.grad_s[static_cast<size_t>(c)];
    if (k.grad_roundtrip) blocking_bwd[first] += t.grad_roundtrip_s[static_cast<size_t>(c)];
  }
  for (size_t b = 0; b < nb; ++b) {
    const double compute = t.fwd_s[b];
    e.forward_s += k.prefetch ? std::max(compute, fetch_at[b]) : compute + fetch_at[b];
  }
  // Backward.
  for (size_t b = nb; b-- > 0;) {
    double compute = t.bwd_s[b];
    if (mode[b] == ActMode::kCheckpoint) compute += t.rec_s[b];
    double comm = comm_bwd[b];
    if (mode[b] == ActMode::kSwap) comm += t.swap_s[b];
    e.backward_s += (k.prefetch ? std::max(compute, comm) : compute + comm) + blocking_bwd[b];
  }
  // Optimizer.
  double upload = 0;
  for (int c = 0; c < n_chunks; ++c) {
    const size_t ci = static_cast<size_t>(c);
    if (persistent(c) && (k.persistent_gpu_adam || !k.offload)) {
      e.gpu_optim_s += k.offload ? t.adam_gpu_s[ci] : t.adam_gpu_s[ci] * static_cast<double>(n);
    } else {
      e.cpu_optim_s += k.cpu_adam_impl == "torch" ? t.adam_torch_s[ci] : t.adam_cpu_s[ci];
      if (k.step_host_passes && !k.cpu_adam_overlap) e.cpu_optim_s += t.step_pass_s[ci];
      if (persistent(c)) upload += t.upload_s[ci];
    }
  }
  e.iteration_s = k.cpu_adam_overlap
                      ? e.forward_s + std::max(e.backward_s + e.gpu_optim_s, e.cpu_optim_s) + upload
                      : e.forward_s + e.backward_s + e.gpu_optim_s + e.cpu_optim_s + upload;

  // Peak GPU memory.
  const ModelStateBytes ms = model_state_bytes(t.state_sizes, k, t.optim_bytes_per_param);
  int64_t states = ms.gpu;
  const int64_t pinned = ms.pinned, pageable = ms.pageable;
  if (k.offload && n_nonpersistent > 0) states += static_cast<int64_t>(std::min(k.n_buffer, n_nonpersistent)) * t.chunk_bytes;
  int64_t kept_act = 0, swapped = 0, bump = 0;
  for (size_t b = 0; b < nb; ++b) {
    switch (mode[b]) {
      case ActMode::kNone: kept_act += t.saved[b]; break;
      case ActMode::kCheckpoint: kept_act += t.ckpt[b]; break;
      case ActMode::kSwap: swapped += t.saved[b]; break;
    }
    bump = std::max(bump, t.fwd_transient[b]);
    int64_t back = t.bwd_transient[b];
    if (mode[b] != ActMode::kNone) back += t.saved[b];  // recomputed or swapped-in activations
    bump = std::max(bump, back);
  }
  const double alpha = 1.0 + t.fragmentation;
  e.peak_gpu_bytes = static_cast<int64_t>(alpha * static_cast<double>(states + kept_act + bump));
  e.peak_pinned_bytes = pinned + swapped;
  e.peak_pageable_bytes = pageable;
  return e;
}

}  // namespace protwin::sim
