// PlanReplayer: what each plan op does (the OpRunner of PlanExecutor), on every device.
//   forward/backward/recompute  the block's explicit forward/backward (runtime/model), weights and
//                               gradients bound as views into the chunks currently on the device
//   h2d param_chunk / d2h grad  chunk store upload / gradient offload (and DeepSpeed's
//   grad_roundtrip, grad_fp32,  gradient path: back to the device, to pageable memory, cast)
//   host_cast
//   host_pass                   DeepSpeed's CPU passes around Adam: overflow scan, unscale, fp16 copy
//   h2d/d2h activation          activation store swap in / out
//   adam_cpu / adam_device      chunk store optimizer steps
//   all_gather / reduce_scatter the chunk's parameters or gradient across the ranks (RankGroup)
//   / all_reduce / broadcast
// Buffers the plan releases at the end of a forward run (a mem effect freeing "chunk<c>.buffer")
// are dropped then. What differs per device (allocation, copies, streams and events, device
// Adam) is a DeviceOps (runtime/memory/copy_engine.h): EmulatedDevice there (throttled memcpy,
// ops synchronous on their worker), CudaDevice in runtime/cuda/cuda_device_ops.h.
// Runtime header: includes ATen.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/rank_group.h"
#include "runtime/executor/plan_executor.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/memory/activation_store.h"
#include "runtime/memory/chunk_store.h"
#include "runtime/memory/copy_engine.h"
#include "runtime/memory/thread_split.h"
#include "runtime/model/transformer.h"
#include "runtime/optim/cpu_adam.h"

namespace protwin::rt {

struct ReplayOptions {
  ThreadSplit threads;
  double link_gbps = 0;  // host<->device copy rate per direction; 0 = unthrottled
  AdamConfig adam;
  RankGroup* ranks = nullptr;  // the plan's ranks (must outlive the replayer); nullptr = one rank
};

struct StepResult {
  double loss = 0;
  traces::Report report;     // measured, meta.source = "runtime"; meta.measured_memory: the allocators'
  // Memory the device's allocators really held (DeviceOps::measured_memory); where the device does
  // not count, the plan's bytes (peak_device_bytes = plan_peak_device_bytes).
  int64_t peak_device_bytes = 0;
  int64_t peak_device_reserved_bytes = 0;
  int64_t peak_pinned_bytes = 0, peak_pageable_bytes = 0;
  // The plan's own bytes charged at the ops' real times (PoolLedger): the report's pool curves.
  int64_t plan_peak_device_bytes = 0;
  int64_t peak_host_bytes = 0;  // the plan's pinned + pageable bytes
};

// The device seam: what the training loop drives, whichever device replays the plan. Both
// devices are PlanReplayer below, with their DeviceOps; runtime/cuda/device.h picks one
// (make_replayer).
class Replayer {
 public:
  virtual ~Replayer() = default;
  // One training iteration on a [B, T] batch (CPU int64 tensors): the whole plan once;
  // `adam_step` is the 1-based optimizer step of this iteration.
  virtual StepResult step(const at::Tensor& tokens, const at::Tensor& targets, int64_t adam_step) = 0;
  // Model states as flat CPU fp32 tensors in stored_parameters order (ChunkStore's contract).
  virtual at::Tensor export_flat(StateKind kind) const = 0;
  virtual void import_flat(StateKind kind, const at::Tensor& flat) = 0;
  virtual void load_params(const std::vector<at::Tensor>& params) = 0;
  virtual const char* device_name() const = 0;  // "emulated" or "cuda"
};

class PlanReplayer : public OpRunner, public Replayer {
 public:
  // The emulated device. `rp` must outlive the replayer. Applies the thread split.
  PlanReplayer(const RuntimePlan& rp, const ReplayOptions& options);
  // Another device (runtime/cuda). The thread split is not applied (compute is the device's).
  PlanReplayer(const RuntimePlan& rp, const ReplayOptions& options, std::unique_ptr<DeviceOps> device);

  ChunkStore& chunks() { return chunks_; }
  const RuntimePlan& plan() const { return rp_; }

  StepResult step(const at::Tensor& tokens, const at::Tensor& targets, int64_t adam_step) override;
  at::Tensor export_flat(StateKind kind) const override { return chunks_.export_flat(kind); }
  void import_flat(StateKind kind, const at::Tensor& flat) override { chunks_.import_flat(kind, flat); }
  void load_params(const std::vector<at::Tensor>& params) override { chunks_.load_params(params); }
  const char* device_name() const override { return device_->name(); }

  void run(const traces::Op& op) override;

 private:
  void run_semantics(const traces::Op& op);
  void bind(int64_t block, bool with_grads, ModelWeights& w, ModelWeights& g);

  const RuntimePlan& rp_;
  ReplayOptions options_;
  std::unique_ptr<DeviceOps> device_;  // outlives the stores
  ChunkStore chunks_;
  ActivationStore acts_;
  PlanExecutor executor_;
  std::map<int, int> buffer_chunk_;  // plan tensor id of "chunk<c>.buffer" -> c

  // Iteration state, each touched only by ops the plan orders.
  at::Tensor tokens_, targets_, x_, dx_, loss_;
  EmbeddingActs emb_acts_;
  HeadActs head_acts_;
  int64_t adam_step_ = 0;
};

}  // namespace protwin::rt
