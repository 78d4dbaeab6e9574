// Where one rank's model states (fp16 params and grads, fp32 master, Adam m and v) live, in bytes
// per memory pool, for a knob setting. One function for the compiler (the plan's initial pools)
// and the analytic model (the search's pruning), so the two cannot drift apart.
//
// Pinned host memory is counted as the system's code allocates it (knob pinned_alloc):
//   exact            cudaHostAlloc of the exact sizes (ProTrain, REFERENCE §1; Gemini's chunks).
//   torch_per_chunk  every gather unit's fp32 flat parameter and its fp32 CPU gradient (knobs
//                    host_fp32_params, host_grad_bytes 4) through
//                    tensor.pin_memory() (PyTorch FSDP with CPUOffload, flat_param.py
//                    init_flat_param_attributes: _local_shard.pin_memory(), _cpu_grad).
//   torch_flat       DeepSpeed stage 3 (0.12) with offload_param/offload_optimizer pin_memory:
//                    each parameter's partition pinned at zero.Init, then moved into one flat
//                    pinned fp16 buffer (param_groups_fp16_flat_cpu_memory); the pinned fp16
//                    grad_partitions_flat_buffer; the fp32 gradient of each sub-group of
//                    sub_group_size (1e9) elements, pinned.
// tensor.pin_memory() goes through PyTorch's caching host allocator, which rounds every block up
// to the next power of two (CachingHostAllocator.cpp: PowerOf2Ceil, from 1.13 on) and keeps freed
// blocks cached until emptyCache, so DeepSpeed's per-parameter partitions stay reserved after the
// move into the flat buffer. The reserve beyond the requested bytes is reported as
// pinned_slack and counted in the pinned pool.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/offload/compiler/chunking.h"
#include "sim/offload/compiler/knobs.h"

namespace protwin::sim::offload {

struct ModelStateBytes {
  int64_t gpu = 0;           // persistent chunks (and everything, without offload)
  int64_t pinned = 0;        // host param shards and gradient storage, including pinned_slack
  int64_t pageable = 0;      // host fp32 master (unless the pinned shard is it) and Adam states
  int64_t pinned_slack = 0;  // what the pinned allocator reserves beyond the requested bytes
};

// One rank of `ranks` with chunks `layout`: its model states under `k` (chunks [0, n_persist)
// persistent), with `optim_bytes_per_param` bytes of optimizer state per parameter.
ModelStateBytes model_state_bytes(const ChunkLayout& layout, int64_t ranks, const OffloadKnobs& k,
                                  int64_t optim_bytes_per_param);

// The bytes PyTorch's caching host allocator reserves for a pinned request of `bytes`.
int64_t torch_pinned_reserve(int64_t bytes);

// DeepSpeed's default sub_group_size (elements per optimizer sub-group).
constexpr int64_t kDeepSpeedSubGroupElems = 1000000000;

}  // namespace protwin::sim::offload
