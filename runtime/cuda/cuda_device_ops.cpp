#include "runtime/cuda/cuda_device_ops.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include "runtime/optim/device_adam.h"
#include "traces/error.h"

namespace protwin::rt {

CudaDevice::CudaDevice(const RuntimePlan& rp)
    : memory_(rp.gpu_capacity(), rp.source + ":/pools/gpu"), streams_(rp.plan), compute_(streams_.stream("compute")) {}

at::Tensor CudaDevice::device_zeros(int64_t n) {
  c10::cuda::CUDAStreamGuard guard(compute_);  // the stream that uses persistent states
  return memory_.device_zeros({n});
}

at::Tensor CudaDevice::device_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  return at::empty(sizes, memory_.device_options().dtype(dtype));  // on the current stream
}

at::Tensor CudaDevice::host_zeros(int64_t n) { return memory_.pinned_zeros({n}); }

at::Tensor CudaDevice::host_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  return memory_.pinned_empty(sizes, dtype);
}

void CudaDevice::copy(const at::Tensor& dst, const at::Tensor& src, Link link) {
  (void)link;  // the calling op's stream is current: h2d or d2h
  at::Tensor d = dst;
  d.copy_(src, /*non_blocking=*/true);
}

void CudaDevice::used_here(const at::Tensor& t) { t.record_stream(c10::cuda::getCurrentCUDAStream().unwrap()); }

void CudaDevice::used_by_compute(const at::Tensor& t) { t.record_stream(compute_.unwrap()); }

void CudaDevice::wait_copies() { c10::cuda::getCurrentCUDAStream().synchronize(); }

void CudaDevice::synchronize() { c10::cuda::device_synchronize(); }

void CudaDevice::adam(const AdamConfig& cfg, int64_t step, at::Tensor& param, at::Tensor& grad, at::Tensor& exp_avg,
                      at::Tensor& exp_avg_sq, int threads) {
  (void)threads;  // the GPU's
  adam_step_device(cfg, step, param, grad, exp_avg, exp_avg_sq);
}

void CudaDevice::run_op(const traces::Op& op, const std::function<void()>& body) {
  const std::optional<c10::cuda::CUDAStream> s = streams_.stream_of(op);
  if (!s) {  // host op: deps synchronized, then run here
    streams_.before(op);
    body();
    return;
  }
  c10::cuda::CUDAStreamGuard guard(*s);  // ATen kernels, copies and allocations go to the op's stream
  streams_.before(op);
  body();
  streams_.after(op);
}

void CudaDevice::begin_iteration() {
  streams_.begin_iteration();
  memory_.reset_peak();
}

void CudaDevice::finish_iteration(traces::Report& report) { streams_.finish_iteration(report); }

at::Tensor CudaDevice::to_compute(const at::Tensor& host) {
  c10::cuda::CUDAStreamGuard guard(compute_);
  return host.to(memory_.device_options().dtype(host.scalar_type()));
}

void CudaDevice::describe(nlohmann::json& meta) const {
  meta["device"] = "cuda";
  meta["cuda_allocated_peak_bytes"] = memory_.peak_allocated_bytes();
}

}  // namespace protwin::rt
