// The CUDA device behind the DeviceOps seam (runtime/memory/copy_engine.h): PlanReplayer's op
// semantics, chunk store and activation store run unchanged; this says how on a GPU.
//   memory   device tensors from the caching allocator capped at the plan's gpu pool, host
//            tensors pinned (CudaMemory); persistent states are allocated on the compute stream
//   copies   tensor.copy_(src, non_blocking=true) on the calling op's stream; a tensor used on a
//            stream other than its allocation stream is record_stream()ed there, so the allocator
//            does not reuse it early
//   ordering PlanExecutor still runs one worker thread per plan stream, but each worker only
//            ENQUEUES its ops on that stream's CUDAStream (CudaStreams: deps as events, op timing
//            by events); host ops (CPU Adam) run on their worker after synchronizing on their deps
//   Adam     adam_step_device (ATen kernels on the GPU)
// The plan's byte accounting (PoolLedger) is charged as on the emulated device; the allocator's
// real peak goes into the report's meta.
// CUDA build only (PROTWIN_WITH_CUDA). Runtime header: includes ATen and c10/cuda.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "runtime/cuda/cuda_memory.h"
#include "runtime/cuda/cuda_streams.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/memory/copy_engine.h"

namespace protwin::rt {

class CudaDevice : public DeviceOps {
 public:
  // `rp` must outlive the device. Uses the current CUDA device.
  explicit CudaDevice(const RuntimePlan& rp);

  const char* name() const override { return "cuda"; }
  at::Tensor device_zeros(int64_t n) override;
  at::Tensor device_empty(at::IntArrayRef sizes, at::ScalarType dtype) override;
  at::Tensor host_zeros(int64_t n) override;
  at::Tensor host_empty(at::IntArrayRef sizes, at::ScalarType dtype) override;
  void copy(const at::Tensor& dst, const at::Tensor& src, Link link) override;
  void used_here(const at::Tensor& t) override;
  void used_by_compute(const at::Tensor& t) override;
  void wait_copies() override;
  void synchronize() override;
  void adam(const AdamConfig& cfg, int64_t step, at::Tensor& param, at::Tensor& grad, at::Tensor& exp_avg,
            at::Tensor& exp_avg_sq, int threads) override;

  void run_op(const traces::Op& op, const std::function<void()>& body) override;
  void begin_iteration() override;
  void finish_iteration(traces::Report& report) override;
  at::Tensor to_compute(const at::Tensor& host) override;
  void describe(nlohmann::json& meta) const override;

 private:
  CudaMemory memory_;
  CudaStreams streams_;
  c10::cuda::CUDAStream compute_;
};

}  // namespace protwin::rt
