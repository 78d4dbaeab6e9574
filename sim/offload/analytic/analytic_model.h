// ProTrain's analytic cost and peak-memory models (REFERENCE §1), used by the search to prune
// (peak) and to rank (runtime) before the simulator scores the survivors.
//
//   T_iter = T_fwd + max(T_bwd + T_gpu_optim, T_cpu_optim)      (CPU Adam overlapped)
//   T_iter = T_fwd + T_bwd + T_gpu_optim + T_cpu_optim          (optimizer after backward)
//   T_fwd  = sum over blocks of max(forward compute, prefetch of the chunks first used there),
//            each block also waiting for the swap-out swap_spacing blocks back
//   T_bwd  = sum over blocks of max(backward + recompute, gradient reduce/offload + re-fetches
//            + swap-in), gradients of persistent chunks reduced too
//   peak   = alpha * (model states on the GPU + the n_buffer largest chunk buffers + the largest
//            activation total of any block: in forward what the blocks so far keep, the swap-outs
//            in flight and its temporaries; in backward what the blocks below keep, its own
//            activations and temporaries), alpha = 1 + the allocator's fragmentation fraction.
// Differences from the simulator: the analytic model sums per-block maxima, so it cannot see a
// prefetch that runs ahead over several blocks, or copies in both directions slowing each other.
#pragma once

#include <cstdint>
#include <vector>

#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/compiler/chunking.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/offload/analytic/model_state_bytes.h"
#include "sim/workload/workload.h"

namespace protwin::sim::offload {

// Per-block and per-chunk times and sizes of one (workload, layout, machine, gpus), computed once
// and shared by every knob setting the search visits.
struct WorkloadTimes {
  int gpus = 1;
  std::vector<double> fwd_s, bwd_s, rec_s;          // per block
  std::vector<double> swap_out_s, swap_in_s;        // per block: its saved activations D2H, H2D
  std::vector<int64_t> saved, ckpt, fwd_transient, bwd_transient;  // per block, bytes
  std::vector<int> layer_block;                      // decoder layer -> block index
  // Per chunk: fetch = H2D (+ all-gather); offload = the gradient's D2H; reduce = its
  // reduce-scatter (all_reduce without offload), 0 on one GPU.
  std::vector<double> fetch_s, offload_s, reduce_s, all_reduce_s, adam_cpu_s, adam_torch_s, adam_gpu_s, upload_s;
  std::vector<double> step_pass_s;       // per chunk: DeepSpeed's CPU passes around Adam (step_host_passes)
  std::vector<double> grad_roundtrip_s;  // per chunk: the blocking copies and cast of grad_roundtrip
  // The runs of consecutive blocks that use a chunk (ChunkLayout::block_uses), in the order the
  // forward pass fetches them; a tied embedding's chunk has two.
  struct Run {
    int chunk = 0, first_block = 0, last_block = 0;
    bool completes_grad = false;  // the run holding the chunk's lowest block
  };
  std::vector<Run> runs;
  std::vector<int> chunk_lowest_block;  // per chunk
  std::vector<int64_t> chunk_capacity;  // per chunk: its GPU buffer, bytes
  int64_t staging_bytes = 0;            // host_fp32_params: the largest fp32 staging tensor
  ChunkLayout layout;           // what model_state_bytes needs
  int64_t optim_bytes_per_param = 12;
  double fragmentation = 0.1;
};

// `system` gives the behaviour switches that change sizes (host_fp32_params); the knobs the
// search varies are read by analytic_estimate. `nodes`: the nodes the gpus ranks spread over
// (collectives priced per level, host shared by gpus / nodes ranks), as the compiled plan.
WorkloadTimes workload_times(const Workload& w, const ChunkLayout& layout, const hw::HardwareCostModel& cost,
                             int gpus, const OffloadKnobs& system, int nodes = 1);

struct AnalyticEstimate {
  double iteration_s = 0, forward_s = 0, backward_s = 0, gpu_optim_s = 0, cpu_optim_s = 0;
  int64_t peak_gpu_bytes = 0;     // with the fragmentation factor
  int64_t peak_pinned_bytes = 0;
  int64_t peak_pageable_bytes = 0;
};

AnalyticEstimate analytic_estimate(const WorkloadTimes& t, const OffloadKnobs& k,
                                   const std::vector<ActMode>& layer_modes);
// The activations' part of the peaks, set by the layers' modes (n_swap, n_checkpoint) and the
// swap spacing alone: the search keeps it for every n_persist and n_buffer.
struct ActivationPeak {
  int64_t gpu_bytes = 0;      // the largest activation total of any block (peak, above)
  int64_t swapped_bytes = 0;  // in pinned memory
};
ActivationPeak activation_peak(const WorkloadTimes& t, int swap_spacing, const std::vector<ActMode>& layer_modes);
// Only the peaks (the times stay 0) of setting k whose activations take `act`: the search's fit checks.
AnalyticEstimate analytic_peak(const WorkloadTimes& t, const OffloadKnobs& k, const ActivationPeak& act);

}  // namespace protwin::sim::offload
