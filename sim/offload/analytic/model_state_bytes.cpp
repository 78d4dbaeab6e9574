#include "sim/offload/analytic/model_state_bytes.h"

#include "traces/error.h"
#include "traces/units.h"

namespace protwin::sim::offload {

namespace {

// What `k.pinned_alloc` reserves beyond the requested bytes for the host-resident chunks
// [first_host, end) (model_state_bytes.h says how each system allocates).
int64_t pinned_slack(const ChunkLayout& layout, int64_t N, const OffloadKnobs& k, size_t first_host) {
  const int64_t e = layout.bytes_per_elem;
  auto waste = [](int64_t bytes) { return torch_pinned_reserve(bytes) - bytes; };
  int64_t slack = 0;
  if (k.pinned_alloc == "torch_per_chunk") {
    // FSDP: the unit's fp32 flat parameter shard and its fp32 CPU gradient, pinned one by one.
    for (size_t c = first_host; c < layout.chunks.size(); ++c)
      slack += 2 * waste(4 * ceil_div(layout.chunks[c].used_elems, N));
  } else if (k.pinned_alloc == "torch_flat") {
    // DeepSpeed stage 3: per-parameter partitions (reserved whole, kept cached), one flat fp16
    // parameter buffer and one flat fp16 gradient buffer of all partitions, and the fp32
    // gradient of each sub-group (closed once it reaches sub_group_size, stage3.py
    // _create_fp16_sub_groups).
    int64_t flat = 0, sub_group = 0;
    for (size_t c = first_host; c < layout.chunks.size(); ++c) {
      for (const PackedTensor& t : layout.chunks[c].tensors) {
        const int64_t part = ceil_div(t.numel, N);
        slack += torch_pinned_reserve(e * part);
        flat += part;
        sub_group += part;
        if (sub_group >= kDeepSpeedSubGroupElems) {
          slack += waste(4 * sub_group);
          sub_group = 0;
        }
      }
    }
    slack += waste(4 * sub_group) + 2 * waste(e * flat);
  } else {
    PROTWIN_ASSERT(k.pinned_alloc == "exact", "unknown pinned_alloc ", k.pinned_alloc);
  }
  return slack;
}
}  // namespace

int64_t torch_pinned_reserve(int64_t bytes) {
  if (bytes <= 0) return 0;
  int64_t p = 1;
  while (p < bytes) p <<= 1;
  return p;
}

ModelStateBytes model_state_bytes(const ChunkLayout& layout, int64_t N, const OffloadKnobs& k,
                                  int64_t optim_bytes_per_param) {
  ModelStateBytes m;
  for (size_t c = 0; c < layout.chunks.size(); ++c) {
    const int64_t elems = layout.chunks[c].used_elems;
    const int64_t used = elems * layout.bytes_per_elem;
    const int64_t shard = ceil_div(used, N);
    const int64_t optim = ceil_div(elems * optim_bytes_per_param, N);
    if (!k.offload) {
      // DDP: fp16 params and grads plus the full fp32 optimizer state, replicated on every GPU.
      m.gpu += 2 * used + elems * optim_bytes_per_param;
    } else if (static_cast<int64_t>(c) < k.n_persist) {
      // Persistent: full fp16 params and grads on the GPU; the fp32 state sharded on the GPU
      // (GPU Adam) or on the host (ZeRO-Offload's CPU Adam, with a pinned grad shard).
      m.gpu += 2 * used;
      if (k.persistent_gpu_adam) {
        m.gpu += optim;
      } else {
        m.pinned += host_grad_shard(k, elems, shard, N);
        m.pageable += optim;
      }
    } else {
      // The param shard (+ a separate grad shard) pinned, the fp32 state pageable; an fp32 host
      // shard (host_fp32_params) is the master itself, so the pageable part keeps only m and v.
      m.pinned += host_param_shard(k, elems, shard, N) +
                  (k.grad_reuses_param_buffer ? 0 : host_grad_shard(k, elems, shard, N));
      const bool master_is_shard = k.host_fp32_params && layout.bytes_per_elem < 4;
      m.pageable += master_is_shard ? ceil_div(elems * (optim_bytes_per_param - 4), N) : optim;
    }
  }
  if (k.offload && static_cast<size_t>(k.n_persist) < layout.chunks.size()) {
    m.pinned_slack = pinned_slack(layout, N, k, static_cast<size_t>(k.n_persist));
    m.pinned += m.pinned_slack;
  }
  return m;
}

}  // namespace protwin::sim::offload
