// The CUDA device's replayer: the same op semantics as PlanReplayer (runtime/executor/
// plan_replayer.h) on a GPU. PlanExecutor still runs one worker thread per plan stream, but each
// worker only ENQUEUES its ops on that stream's CUDAStream (CudaStreams: deps as events, op timing
// by events); host ops (CPU Adam) run on their worker after synchronizing on their deps. The
// plan's byte accounting (PoolLedger) is charged as on the emulated device; the caching allocator
// is additionally capped at the plan's gpu capacity and its real peak goes into the report's meta.
// CUDA build only (PROTWIN_WITH_CUDA). Runtime header: includes ATen and c10/cuda.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/cuda/cuda_chunk_store.h"
#include "runtime/cuda/cuda_memory.h"
#include "runtime/cuda/cuda_streams.h"
#include "runtime/executor/plan_executor.h"
#include "runtime/executor/plan_replayer.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/model/transformer.h"

namespace protwin::rt {

class CudaReplayer : public OpRunner, public Replayer {
 public:
  // `rp` must outlive the replayer. Uses the current CUDA device.
  CudaReplayer(const RuntimePlan& rp, const ReplayOptions& options);

  StepResult step(const at::Tensor& tokens, const at::Tensor& targets, int64_t adam_step) override;
  at::Tensor export_flat(StateKind kind) const override { return chunks_.export_flat(kind); }
  void import_flat(StateKind kind, const at::Tensor& flat) override { chunks_.import_flat(kind, flat); }
  void load_params(const std::vector<at::Tensor>& params) override { chunks_.load_params(params); }
  const char* device_name() const override { return "cuda"; }

  void run(const traces::Op& op) override;

 private:
  void run_on_stream(const traces::Op& op);
  void bind(int64_t block, bool with_grads, ModelWeights& w, ModelWeights& g);
  // SWAP: the layer's saved tensors to pinned host memory (on d2h) and back (on h2d).
  void swap_out(int64_t layer);
  void swap_in(int64_t layer);

  const RuntimePlan& rp_;
  ReplayOptions options_;
  CudaMemory memory_;
  CudaStreams streams_;
  CudaChunkStore chunks_;
  PlanExecutor executor_;
  std::map<int, int> buffer_chunk_;  // plan tensor id of "chunk<c>.buffer" -> c

  // Iteration state, each touched only by ops the plan orders.
  at::Tensor tokens_, targets_, x_, dx_, loss_;
  EmbeddingActs emb_acts_;
  HeadActs head_acts_;
  std::vector<LayerActs> acts_, host_acts_;  // per decoder layer: on the GPU, swapped to host
  int64_t adam_step_ = 0;
};

}  // namespace protwin::rt
