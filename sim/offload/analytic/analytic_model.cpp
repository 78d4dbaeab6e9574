#include "sim/offload/analytic/analytic_model.h"

#include <algorithm>
#include <functional>

#include "sim/offload/compiler/offload_compiler.h"
#include "traces/units.h"

namespace protwin::sim::offload {

WorkloadTimes workload_times(const Workload& w, const ChunkLayout& layout, const hw::HardwareCostModel& cost,
                             int gpus, const OffloadKnobs& system, int nodes) {
  WorkloadTimes t;
  t.gpus = gpus;
  const size_t nb = w.blocks.size();
  t.layer_block.assign(static_cast<size_t>(w.model.layers), -1);
  auto pinned_copy_s = [&](int64_t bytes, hw::CopyDirection d) {
    return cost.copy_seconds(static_cast<double>(bytes), d, true, false);
  };
  for (size_t b = 0; b < nb; ++b) {
    const Block& bl = w.blocks[b];
    t.fwd_s.push_back(cost.kernel_set_time(bl.forward, false).seconds);
    t.bwd_s.push_back(cost.kernel_set_time(bl.backward, true).seconds);
    t.rec_s.push_back(cost.kernel_set_time(bl.recompute, false).seconds);
    t.swap_out_s.push_back(pinned_copy_s(bl.saved_bytes, hw::CopyDirection::kD2H));
    t.swap_in_s.push_back(pinned_copy_s(bl.saved_bytes, hw::CopyDirection::kH2D));
    t.saved.push_back(bl.saved_bytes);
    t.ckpt.push_back(bl.checkpoint_bytes);
    t.fwd_transient.push_back(bl.forward_transient_bytes);
    t.bwd_transient.push_back(bl.backward_transient_bytes);
    if (bl.layer >= 0) t.layer_block[static_cast<size_t>(bl.layer)] = static_cast<int>(b);
  }
  const int64_t n = gpus;
  const int ranks_on_host = std::min(gpus / std::max(1, nodes), std::max(1, cost.machine().gpu.count));
  auto collective_s = [&](hw::CollectiveKind kind, int64_t bytes) {  // 0 on one GPU
    const double b = static_cast<double>(bytes);
    if (gpus <= 1) return 0.0;
    return nodes > 1 ? cost.collective_time(kind, b, gpus, gpus / nodes, 1).seconds
                     : cost.collective_time(kind, b, gpus).seconds;
  };
  for (const auto& c : layout.chunks) {
    const int64_t used = c.used_elems * layout.bytes_per_elem;
    const int64_t shard = ceil_div(used, n);
    const int64_t moved = host_param_shard(system, c.used_elems, shard, n);
    const double params = static_cast<double>(ceil_div(c.used_elems, n));
    const double gather = collective_s(hw::CollectiveKind::kAllGather, used);
    t.fetch_s.push_back(pinned_copy_s(moved, hw::CopyDirection::kH2D) + gather);
    t.upload_s.push_back(pinned_copy_s(shard, hw::CopyDirection::kH2D) + gather);
    t.offload_s.push_back(pinned_copy_s(moved, hw::CopyDirection::kD2H));
    t.reduce_s.push_back(collective_s(hw::CollectiveKind::kReduceScatter, used));
    t.all_reduce_s.push_back(collective_s(hw::CollectiveKind::kAllReduce, used));
    t.grad_roundtrip_s.push_back(pinned_copy_s(shard, hw::CopyDirection::kH2D) +
                                 cost.copy_seconds(static_cast<double>(shard), hw::CopyDirection::kD2H, false, false) +
                                 cost.host_cast_seconds(static_cast<double>(shard + shard * 4 / layout.bytes_per_elem),
                                                          ranks_on_host));
    t.adam_cpu_s.push_back(cost.cpu_adam_seconds(params, ranks_on_host));
    t.adam_torch_s.push_back(cost.cpu_adam_seconds(params, ranks_on_host) * cost.machine().cpu_adam.torch_slowdown);
    t.adam_gpu_s.push_back(cost.device_adam_seconds(params));
    t.step_pass_s.push_back(
        cost.host_pass_seconds(traces::OpSubKind::kOverflowScan, params * static_cast<double>(kStepScanBytesPerParam), params, ranks_on_host) +
        cost.host_pass_seconds(traces::OpSubKind::kUnscale, params * static_cast<double>(kStepUnscaleBytesPerParam), params, ranks_on_host) +
        cost.host_pass_seconds(traces::OpSubKind::kFp16Copy, params * static_cast<double>(kStepCopyBytesPerParam), params, ranks_on_host));
    t.chunk_capacity.push_back(layout.capacity_bytes(c.id));
    if (moved != shard) t.staging_bytes = std::max(t.staging_bytes, moved);
  }
  // Runs, in forward fetch order (block by block, chunks ascending within a block).
  const size_t nc = layout.chunks.size();
  t.chunk_lowest_block.assign(nc, static_cast<int>(nb));
  std::vector<int> open(nc, -1);  // chunk -> index of its run still open at the previous block
  for (size_t b = 0; b < layout.block_uses.size(); ++b) {
    for (int c : layout.block_uses[b]) {
      const size_t ci = static_cast<size_t>(c);
      t.chunk_lowest_block[ci] = std::min(t.chunk_lowest_block[ci], static_cast<int>(b));
      if (open[ci] >= 0 && t.runs[static_cast<size_t>(open[ci])].last_block == static_cast<int>(b) - 1) {
        t.runs[static_cast<size_t>(open[ci])].last_block = static_cast<int>(b);
      } else {
        open[ci] = static_cast<int>(t.runs.size());
        t.runs.push_back({c, static_cast<int>(b), static_cast<int>(b), false});
      }
    }
  }
  for (auto& r : t.runs) r.completes_grad = r.first_block == t.chunk_lowest_block[static_cast<size_t>(r.chunk)];
  t.layout = layout;
  t.optim_bytes_per_param = optimizer_bytes_per_param(w.options.dtype);
  t.fragmentation = cost.machine().gpu.allocator.fragmentation_fraction;
  return t;
}

namespace {
// Each block's activation mode: its decoder layer's; the embedding and the head keep theirs.
std::vector<ActMode> block_modes(const WorkloadTimes& t, const std::vector<ActMode>& layer_modes) {
  std::vector<ActMode> mode(t.fwd_s.size(), ActMode::kNone);
  for (size_t l = 0; l < layer_modes.size(); ++l) mode[static_cast<size_t>(t.layer_block[l])] = layer_modes[l];
  return mode;
}
}  // namespace

ActivationPeak activation_peak(const WorkloadTimes& t, int swap_spacing, const std::vector<ActMode>& layer_modes) {
  const size_t nb = t.fwd_s.size();
  const std::vector<ActMode> mode = block_modes(t, layer_modes);
  const int lag = std::max(1, swap_spacing);
  // Walked like the plan: in forward, block b holds what the blocks up to it keep, the swap-outs
  // still in flight (SWAP layers of the lag - 1 blocks before it) and its own temporaries; in
  // backward, what the blocks below keep, its own activations (recomputed or swapped in) and its
  // temporaries.
  auto kept_by = [&](size_t b) {
    return mode[b] == ActMode::kNone ? t.saved[b] : mode[b] == ActMode::kCheckpoint ? t.ckpt[b] : 0;
  };
  auto swapped_at = [&](size_t b) { return mode[b] == ActMode::kSwap ? t.saved[b] : 0; };
  ActivationPeak a;
  int64_t kept_upto = 0, in_flight = 0;
  for (size_t b = 0; b < nb; ++b) {
    if (b >= 1) in_flight += swapped_at(b - 1);  // the window of lag - 1 blocks moves on by one
    if (b >= static_cast<size_t>(lag)) in_flight -= swapped_at(b - static_cast<size_t>(lag));
    a.swapped_bytes += swapped_at(b);
    kept_upto += kept_by(b);
    a.gpu_bytes = std::max({a.gpu_bytes, kept_upto + in_flight + t.fwd_transient[b],
                            kept_upto + (mode[b] == ActMode::kNone ? 0 : t.saved[b]) + t.bwd_transient[b]});
  }
  return a;
}

AnalyticEstimate analytic_peak(const WorkloadTimes& t, const OffloadKnobs& k, const ActivationPeak& act) {
  AnalyticEstimate e;
  const ModelStateBytes ms = model_state_bytes(t.layout, t.gpus, k, t.optim_bytes_per_param);
  int64_t states = ms.gpu;
  const int first_host = std::max(0, k.n_persist);
  if (k.offload && first_host < static_cast<int>(t.chunk_capacity.size())) {
    // n_buffer buffers, as large as the largest non-persistent chunks [n_persist, n_chunks)
    // (per-block layouts differ), and the fp32 staging of a fetch and of a gradient offload
    // (host_fp32_params).
    std::vector<int64_t> caps(t.chunk_capacity.begin() + first_host, t.chunk_capacity.end());
    std::sort(caps.begin(), caps.end(), std::greater<>());
    for (size_t i = 0; i < caps.size() && i < static_cast<size_t>(k.n_buffer); ++i) states += caps[i];
    states += 2 * t.staging_bytes;
  }
  const double alpha = 1.0 + t.fragmentation;
  e.peak_gpu_bytes = static_cast<int64_t>(alpha * static_cast<double>(states + act.gpu_bytes));
  e.peak_pinned_bytes = ms.pinned + act.swapped_bytes;
  e.peak_pageable_bytes = ms.pageable;
  return e;
}

AnalyticEstimate analytic_estimate(const WorkloadTimes& t, const OffloadKnobs& k,
                                   const std::vector<ActMode>& layer_modes) {
  AnalyticEstimate e = analytic_peak(t, k, activation_peak(t, k.swap_spacing, layer_modes));
  const size_t nb = t.fwd_s.size();
  const int n_chunks = static_cast<int>(t.fetch_s.size());
  const int64_t n = t.gpus;
  const std::vector<ActMode> mode = block_modes(t, layer_modes);
  auto persistent = [&](int c) { return !k.offload || c < k.n_persist; };

  // Which runs are fetched again in backward: all of the non-persistent chunks' runs except the
  // last n_buffer fetched in forward (buffer reuse).
  int n_runs = 0;
  for (const auto& r : t.runs) n_runs += persistent(r.chunk) ? 0 : 1;
  const int kept = k.buffer_reuse ? std::min(k.n_buffer, n_runs) : 0;

  // Forward fetches; backward re-fetches, gradient reduction and offload at the run's ends.
  std::vector<double> fetch_at(nb, 0), comm_bwd(nb, 0), blocking_bwd(nb, 0);
  int seen = 0;
  for (const auto& r : t.runs) {
    const size_t ci = static_cast<size_t>(r.chunk);
    const size_t first = static_cast<size_t>(r.first_block), last = static_cast<size_t>(r.last_block);
    if (persistent(r.chunk)) {
      // Persistent: reduced where its gradient completes; ZeRO-Offload also offloads it.
      if (!r.completes_grad) continue;
      comm_bwd[first] += k.offload ? t.reduce_s[ci] : t.all_reduce_s[ci];
      if (k.offload && !k.persistent_gpu_adam) comm_bwd[first] += t.offload_s[ci];
      continue;
    }
    fetch_at[first] += t.fetch_s[ci];
    if (seen++ < n_runs - kept) comm_bwd[last] += t.fetch_s[ci];
    comm_bwd[first] += t.offload_s[ci] + (r.completes_grad ? t.reduce_s[ci] : 0.0);
    if (k.grad_roundtrip && r.completes_grad) blocking_bwd[first] += t.grad_roundtrip_s[ci];
  }
  // Forward as a timeline: a block starts when the one before it ends and, like the compiled plan,
  // not before the swap-out of the layer `lag` blocks back is done (the D2H stream copies one
  // swap-out at a time).
  const int lag = std::max(1, k.swap_spacing);
  std::vector<double> swap_done(nb, 0);
  double d2h_free = 0;
  for (size_t b = 0; b < nb; ++b) {
    double start = e.forward_s;
    if (b >= static_cast<size_t>(lag) && mode[b - static_cast<size_t>(lag)] == ActMode::kSwap)
      start = std::max(start, swap_done[b - static_cast<size_t>(lag)]);
    const double compute = t.fwd_s[b];
    e.forward_s = start + (k.prefetch ? std::max(compute, fetch_at[b]) : compute + fetch_at[b]);
    if (mode[b] == ActMode::kSwap) {
      swap_done[b] = std::max(e.forward_s, d2h_free) + t.swap_out_s[b];
      d2h_free = swap_done[b];
    }
  }
  // Backward.
  for (size_t b = nb; b-- > 0;) {
    double compute = t.bwd_s[b];
    if (mode[b] == ActMode::kCheckpoint) compute += t.rec_s[b];
    double comm = comm_bwd[b];
    if (mode[b] == ActMode::kSwap) comm += t.swap_in_s[b];
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
  return e;
}

}  // namespace protwin::sim::offload
