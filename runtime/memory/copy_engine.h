// The device seam below the op semantics, and the emulated device behind it.
//
// DeviceOps: what differs between devices when the shared chunk store, activation store and
// replayer (runtime/memory, runtime/executor/plan_replayer.h) run a plan: how device and host
// tensors are allocated, how a host<->device copy is issued, which stream a tensor must be kept
// alive for, how ops are ordered (streams and events) and how device Adam runs. The CUDA device
// is runtime/cuda/cuda_device_ops.h.
//
// EmulatedDevice: the CPU plays the device. Copies are real memcpys through a CopyEngine, one
// per direction (h2d, d2h), each used by that stream's single worker thread, optionally throttled
// to a link bandwidth so a direction behaves like PCIe; ops run synchronously on their worker.
// Its memory is measured: device tensors, and every tensor ATen allocates while a device op runs
// (outputs, saved activations, temporaries), come from a CachingAllocator (the CUDA caching
// allocator's rounding and segments, caching_allocator.h); pinned and pageable host tensors from
// CountingAllocators. Host ops (adam_cpu, host_cast, host_pass) allocate from plain host memory.
// Runtime header: includes ATen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "runtime/memory/caching_allocator.h"
#include "runtime/optim/cpu_adam.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::rt {

// Rates a throttled link may have (GB/s): below 10 MB/s a plan's copies would take hours.
inline constexpr double kMinLinkGBps = 0.01;
inline constexpr double kMaxLinkGBps = 10000;
// Refuses a --link-GBps that is neither 0 (unthrottled) nor within those bounds, naming the flag.
void check_link_gbps(double gbps);

class CopyEngine {
 public:
  // gbps <= 0: unthrottled (memcpy speed).
  explicit CopyEngine(double gbps = 0.0);

  // Copies `bytes` from src to dst in slices; when throttled, sleeps after each slice so that
  // bytes copied / elapsed time never exceeds the link rate (1 GB/s = 1 byte/ns).
  void copy(void* dst, const void* src, size_t bytes);

  double gbps() const { return gbps_; }
  int64_t bytes_copied() const { return bytes_copied_; }

 private:
  double gbps_;
  int64_t bytes_copied_ = 0;
};

enum class Link { kH2D, kD2H };

// Bytes the device's allocators really held in one iteration (high water since begin_iteration,
// including what stays allocated across iterations). `measured` false: the device does not count.
struct MeasuredMemory {
  bool measured = false;
  int64_t device_allocated_peak = 0;  // blocks in use, rounded as the CUDA caching allocator does
  int64_t device_reserved_peak = 0;   // its segments (fragmentation included)
  int64_t pinned_peak = 0;            // host_zeros / host_empty
  int64_t pageable_peak = 0;          // pageable_empty
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual const char* name() const = 0;  // "emulated" or "cuda"

  // ---- memory (fp32 unless a dtype is given) ----
  // A persistent device tensor, zeroed, owned by the compute stream (chunk states, gradients).
  virtual at::Tensor device_zeros(int64_t n) = 0;
  // A device tensor on the calling op's stream (upload buffers, swapped-in activations).
  virtual at::Tensor device_empty(at::IntArrayRef sizes, at::ScalarType dtype) = 0;
  // Host tensors (pinned on CUDA, so copies to and from them are asynchronous).
  virtual at::Tensor host_zeros(int64_t n) = 0;
  virtual at::Tensor host_empty(at::IntArrayRef sizes, at::ScalarType dtype) = 0;
  // Plain (pageable) host memory.
  virtual at::Tensor pageable_empty(at::IntArrayRef sizes, at::ScalarType dtype);
  // dst = src (contiguous, same bytes), issued over `link` by the calling op.
  virtual void copy(const at::Tensor& dst, const at::Tensor& src, Link link) = 0;
  // Keep `t`'s memory until the calling op's stream (used_here) or the compute stream
  // (used_by_compute) is done with it: a no-op where ops are synchronous.
  virtual void used_here(const at::Tensor& t) { (void)t; }
  virtual void used_by_compute(const at::Tensor& t) { (void)t; }
  // Waits for the copies the calling op issued (before the host reads their destination).
  virtual void wait_copies() {}
  // Waits for all device work (before and after the host reads or writes device states).
  virtual void synchronize() {}
  // Adam on device-resident states; `threads` are the emulated device's compute threads.
  virtual void adam(const AdamConfig& cfg, int64_t step, at::Tensor& param, at::Tensor& grad,
                    at::Tensor& exp_avg, at::Tensor& exp_avg_sq, int threads) = 0;

  // ---- ordering (called by the replayer) ----
  // Runs `body`, the op's semantics, on the executor's worker of the op's stream.
  virtual void run_op(const traces::Op& op, const std::function<void()>& body) { (void)op; body(); }
  // Around one iteration; finish_iteration may rewrite the report's times (device timing).
  virtual void begin_iteration() {}
  virtual void finish_iteration(traces::Report& report) { (void)report; }
  // A host batch tensor where the compute stream reads it.
  virtual at::Tensor to_compute(const at::Tensor& host) { return host; }
  // Device facts for the report's meta.
  virtual void describe(nlohmann::json& meta) const { (void)meta; }
  virtual MeasuredMemory measured_memory() const { return {}; }
};

class EmulatedDevice : public DeviceOps {
 public:
  // `gbps` per direction (<= 0: unthrottled); `compute_threads` only for the report's meta.
  EmulatedDevice(double gbps, int compute_threads);

  const char* name() const override { return "emulated"; }
  at::Tensor device_zeros(int64_t n) override;
  at::Tensor device_empty(at::IntArrayRef sizes, at::ScalarType dtype) override;
  at::Tensor host_zeros(int64_t n) override;
  at::Tensor host_empty(at::IntArrayRef sizes, at::ScalarType dtype) override;
  at::Tensor pageable_empty(at::IntArrayRef sizes, at::ScalarType dtype) override;
  void copy(const at::Tensor& dst, const at::Tensor& src, Link link) override;
  // Runs `body`, stretched by the emulated slowdown (speed_throttle.h).
  void run_op(const traces::Op& op, const std::function<void()>& body) override;
  void begin_iteration() override;
  MeasuredMemory measured_memory() const override;
  void adam(const AdamConfig& cfg, int64_t step, at::Tensor& param, at::Tensor& grad, at::Tensor& exp_avg,
            at::Tensor& exp_avg_sq, int threads) override;
  void describe(nlohmann::json& meta) const override;

 private:
  CopyEngine h2d_, d2h_;
  int compute_threads_;
  CachingAllocator device_memory_;
  CountingAllocator pinned_memory_, pageable_memory_;
};

}  // namespace protwin::rt
