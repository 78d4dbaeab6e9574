// The chunk store: model states laid out as the plan's chunks. Each chunk is ONE flat fp32 tensor
// per role; a parameter is a view into it at the plan's element offset (weights bound with
// bind_block), so uploading a chunk makes every weight in it live at once.
//
// Where each chunk's states live (DESIGN §7, REFERENCE §1):
//   persistent + device optimizer   device: params, grad, Adam m and v, all iteration
//   persistent, host optimizer      device: params, grad; host: master params, grad, m, v
//   (ZeRO-Offload)                  (updated_params h2d brings the master back up)
//   non-persistent                  host: master params (pinned shard), grad (pinned), m, v
//                                   device: a buffer (+ its gradient) between fetch and release
// One store for every device: allocation, copies and stream bookkeeping go through DeviceOps
// (copy_engine.h), so the emulated device and CUDA share these semantics.
//
// On N ranks (RankGroup, runtime/comm/rank_group.h) every host-owned state is this rank's shard
// of the chunk (ZeRO-3): a fetch uploads the shard into its slice of the device buffer and the
// plan's all_gather fills the rest; the plan's reduce_scatter leaves the mean gradient in this
// rank's slice, which is offloaded and updated by CPU Adam. Chunks whose optimizer is on the device
// are replicated (DDP: their reduction is an all-reduce and every rank runs the same Adam, so the
// replicas stay bitwise equal) or, when the plan reduce-scatters them (device_sharded), keep
// whole params and gradient but Adam m and v of this rank's shard only: adam_device updates the
// shard and the plan's all_gather completes the params. A tied gradient offloaded in pieces (partial_grad_chunk) is kept
// whole on the host and added to the device gradient before the chunk's reduction.
// Checkpoint export and import gather and split the shards, so checkpoints do not depend on N.
// Runtime header: includes ATen.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/rank_group.h"
#include "runtime/memory/copy_engine.h"
#include "runtime/model/runtime_model.h"
#include "runtime/optim/cpu_adam.h"

namespace protwin::rt {

// Where one parameter (stored_parameters order) lives.
struct ParamSlot {
  int chunk = 0;
  int64_t offset = 0;  // elements from the chunk start
  int64_t numel = 0;
};

struct ChunkLayout {
  std::vector<ParamSlot> slots;          // stored_parameters(cfg) order
  std::vector<int64_t> chunk_numel;      // used elements of each chunk
  std::vector<bool> device_resident;     // persistent chunks
  std::vector<bool> device_optimizer;    // Adam on the device (persistent with GPU Adam)
  // N ranks: a device-optimizer chunk whose Adam m and v are this rank's shard
  // (traces/chunk_sharding.h); empty = none.
  std::vector<bool> device_sharded;
};

enum class StateKind { kParams, kExpAvg, kExpAvgSq };

class ChunkStore {
 public:
  // `device` and `ranks` must outlive the store.
  ChunkStore(const ModelSpec& cfg, ChunkLayout layout, DeviceOps& device, RankGroup& ranks);

  const ChunkLayout& layout() const { return layout_; }
  int chunks() const { return static_cast<int>(layout_.chunk_numel.size()); }

  // States as one flat CPU fp32 tensor in stored_parameters order (a copy; for checkpoints and tests).
  // These synchronize the device; on N ranks every rank must call them (export gathers shards).
  at::Tensor export_flat(StateKind kind) const;
  void import_flat(StateKind kind, const at::Tensor& flat);
  // Convenience: weights given per parameter (stored_parameters order); Adam states zeroed.
  void load_params(const std::vector<at::Tensor>& params);

  // ---- device side (called by the replayer's stream workers; the plan's deps order them) ----
  // Each issues its copies and kernels as the calling op (on its stream, for CUDA).
  // h2d param_chunk: a fresh device buffer filled from the host master.
  void upload(int c);
  // h2d updated_params (ZeRO-Offload): the persistent device copy refreshed from the host master.
  void upload_updated(int c);
  // d2h grad_chunk / partial_grad_chunk: host grad = device grad (first offload of the iteration)
  // or += (a tied parameter's gradient arriving in pieces). A buffer is freed; a persistent
  // chunk's device grad is zeroed for the next iteration. On N ranks a partial gradient goes to
  // the whole-chunk host_partial instead (reduce_grad adds it before the reduction).
  void offload_grad(int c, bool partial);
  // Collectives (the plan's collective stream), on the chunk's device tensors:
  //   all_gather      the oldest buffer not yet gathered (or the persistent params) completed
  //   reduce_scatter  mean gradient in this rank's shard; all_reduce (and any reduction of a
  //   all_reduce      chunk whose optimizer is on the device): mean gradient everywhere
  //   broadcast       the chunk's params from rank 0
  void gather_params(int c);
  void reduce_grad(int c, bool everywhere);
  void broadcast_params(int c);
  // DeepSpeed's gradient path (knob grad_roundtrip), after offload_grad:
  //   h2d grad_roundtrip  the host gradient copied back to a device scratch (for its norm)
  //   d2h grad_fp32       that scratch copied into a pageable host temporary
  //   host_cast           the temporary cast into the chunk's separate host fp32 gradient, which
  //                       this iteration's adam_host then reads
  void grad_roundtrip(int c);
  void grad_to_pageable(int c);
  void cast_grad(int c);
  // DeepSpeed's CPU passes around CPU Adam (knob step_host_passes), on the host gradients Adam
  // reads and the masters it writes:
  //   host_pass overflow_scan  isinf/isnan over every host gradient of the iteration; a non-finite
  //                            value is an error (the runtime trains fp32 with no loss scaler, so
  //                            there is no step to skip as DeepSpeed would)
  //   host_pass unscale        the gradient times 1/loss scale (1 here: no loss scaling)
  //   host_pass fp16_copy      the updated master copied into a half-precision mirror, DeepSpeed's
  //                            fp16 partition (the runtime computes in fp32 and never reads it)
  void overflow_scan();
  void unscale_grad(int c);
  void copy_to_half(int c);
  // A buffer dropped without offloading (end of a forward run): the oldest one of the chunk.
  // A plan may fetch a chunk again before the previous buffer of it is released (both hold the
  // same values: the master changes only after the chunk's gradient is offloaded).
  void release_buffer(int c);
  bool on_device(int c) const;

  // Views of `block`'s weights and gradients into the device chunks, written at the block's
  // indices of stored_parameters order (other entries untouched). Gradient buffers are created zeroed
  // on first use.
  void block_views(int64_t block, std::vector<at::Tensor>& params, std::vector<at::Tensor>& grads,
                   bool with_grads);

  // ---- optimizer ----
  // adam_cpu: the host shard; impl "simd" (cpu_adam.h) or "torch" (ATen ops, device_adam.h).
  void adam_host(int c, const AdamConfig& cfg, int64_t step, bool simd, int threads);
  // adam_device: a persistent chunk on the device (DeviceOps::adam); then its gradient is zeroed.
  void adam_device(int c, const AdamConfig& cfg, int64_t step, int threads);

  void begin_iteration();

 private:
  struct Chunk {
    at::Tensor host_params, host_grad, host_m, host_v;  // pinned on CUDA
    at::Tensor dev_params, dev_grad, dev_m, dev_v;  // dev_params: persistent chunks only
    std::deque<at::Tensor> buffers;                 // non-persistent: live device buffers, oldest first
    std::deque<at::Tensor> ungathered;              // N ranks: uploaded buffers awaiting their all_gather
    at::Tensor host_partial;                        // N ranks: a tied gradient's first pieces, whole chunk
    bool host_partial_valid = false;
    bool host_grad_valid = false;  // host_grad holds this iteration's (partial) gradient
    at::Tensor dev_grad_copy, pageable_grad, host_grad_fp32;  // grad_roundtrip's path
    bool host_grad_fp32_valid = false;  // host_grad_fp32 holds this iteration's gradient
    at::Tensor host_half;               // fp16_copy's mirror of the master
  };
  at::Tensor& adam_grad(Chunk& ch) { return ch.host_grad_fp32_valid ? ch.host_grad_fp32 : ch.host_grad; }
  at::Tensor device_params_locked(int c) const;
  bool host_owned(int c) const;
  bool device_sharded(int c) const;
  Shard host_shard(int c) const;  // the elements of chunk c this rank's optimizer states hold
  // Whether chunk c's `kind` state is held as shards (and so export_flat gathers it). Decided from
  // the layout and the rank count alone, the same on every rank: a rank whose shard happens to be
  // the whole chunk (a chunk of fewer elements than ranks) still joins the gather.
  bool sharded_state(int c, StateKind kind) const;
  at::Tensor& master(int c);
  const at::Tensor& state(int c, StateKind kind) const;

  ModelSpec cfg_;
  std::vector<ParamTensor> specs_;
  ChunkLayout layout_;
  DeviceOps& device_;
  RankGroup& ranks_;
  std::vector<Chunk> chunks_;
  mutable std::mutex mu_;  // device-side handles (buffers, gradients) change on several streams
};

}  // namespace protwin::rt
