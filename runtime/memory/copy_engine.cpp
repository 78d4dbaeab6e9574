#include "runtime/memory/copy_engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>

#include "runtime/memory/speed_throttle.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {
// Small enough that the throttle tracks the rate closely, large enough that memcpy runs at speed.
constexpr size_t kSliceBytes = size_t{1} << 20;
}  // namespace

void check_link_gbps(double gbps) {
  PROTWIN_CHECK(gbps == 0 || (gbps >= kMinLinkGBps && gbps <= kMaxLinkGBps), "--link-GBps ", gbps,
                ": expected 0 (unthrottled) or a rate from ", kMinLinkGBps, " to ", kMaxLinkGBps, " GB/s");
}

CopyEngine::CopyEngine(double gbps) : gbps_(gbps) {}

void CopyEngine::copy(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const auto t0 = std::chrono::steady_clock::now();
  // An emulated link slowdown (speed_throttle.h) lowers the throttled rate itself: a slower link,
  // without an extra sleep (and wake-up) per copy.
  const double gbps = gbps_ / emulated_copy_slowdown();
  size_t done = 0;
  while (done < bytes) {
    const size_t n = std::min(kSliceBytes, bytes - done);
    std::memcpy(d + done, s + done, n);
    done += n;
    if (gbps > 0) {
      // Earliest time at which `done` bytes are allowed to have crossed the link.
      const auto due = t0 + std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(done) / gbps));
      std::this_thread::sleep_until(due);
    }
  }
  if (gbps_ <= 0) stretch_copy(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  bytes_copied_ += static_cast<int64_t>(bytes);
}

at::Tensor DeviceOps::pageable_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  return at::empty(sizes, at::TensorOptions().dtype(dtype));
}

namespace {
at::Tensor empty_from(c10::Allocator& allocator, at::IntArrayRef sizes, at::ScalarType dtype) {
  return at::Tensor(at::detail::empty_generic(sizes, &allocator, c10::DispatchKeySet(c10::DispatchKey::CPU), dtype,
                                              c10::nullopt));
}
// Ops whose work is the host's (cpu_optim stream): their temporaries are not device memory.
bool host_op(const traces::Op& op) {
  return op.kind == traces::OpKind::kAdamCpu || op.kind == traces::OpKind::kHostCast || op.kind == traces::OpKind::kHostPass;
}
}  // namespace

EmulatedDevice::EmulatedDevice(double gbps, int compute_threads)
    : h2d_(gbps), d2h_(gbps), compute_threads_(compute_threads) {}

at::Tensor EmulatedDevice::device_zeros(int64_t n) { return device_empty({n}, at::kFloat).zero_(); }

at::Tensor EmulatedDevice::device_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  return empty_from(device_memory_, sizes, dtype);
}

at::Tensor EmulatedDevice::host_zeros(int64_t n) { return host_empty({n}, at::kFloat).zero_(); }

at::Tensor EmulatedDevice::host_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  return empty_from(pinned_memory_, sizes, dtype);
}

at::Tensor EmulatedDevice::pageable_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  return empty_from(pageable_memory_, sizes, dtype);
}

void EmulatedDevice::run_op(const traces::Op& op, const std::function<void()>& body) {
  // Runs `body` (a device op's allocations from the caching allocator); a device op is stretched
  // by the emulated slowdown (speed_throttle.h). Not a copy op: its copies run at the emulated
  // link's own slowdown (CopyEngine), and stretching it would also stretch its wait for the link.
  // Not a host op (CPU Adam, host passes): the emulated slowdown is the device's, not the host's.
  const auto t0 = std::chrono::steady_clock::now();
  if (host_op(op)) {
    body();
    return;
  }
  {
    AllocateOnThread on_device(&device_memory_);
    body();
  }
  if (op.kind != traces::OpKind::kH2D && op.kind != traces::OpKind::kD2H) stretch(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void EmulatedDevice::begin_iteration() {
  device_memory_.reset_peaks();
  pinned_memory_.reset_peak();
  pageable_memory_.reset_peak();
}

MeasuredMemory EmulatedDevice::measured_memory() const {
  MeasuredMemory m;
  m.measured = true;
  m.device_allocated_peak = device_memory_.allocated().peak;
  m.device_reserved_peak = device_memory_.reserved().peak;
  m.pinned_peak = pinned_memory_.counter().peak;
  m.pageable_peak = pageable_memory_.counter().peak;
  return m;
}

void EmulatedDevice::copy(const at::Tensor& dst, const at::Tensor& src, Link link) {
  // A byte copy: both tensors dense with one layout (contiguous, or a swapped activation's order).
  PROTWIN_ASSERT(dst.nbytes() == src.nbytes() && dst.strides() == src.strides() &&
                     dst.is_non_overlapping_and_dense() && src.is_non_overlapping_and_dense(),
                 "device copy of ", src.nbytes(), " bytes into ", dst.nbytes());
  (link == Link::kH2D ? h2d_ : d2h_).copy(dst.data_ptr(), src.data_ptr(), src.nbytes());
}

void EmulatedDevice::adam(const AdamConfig& cfg, int64_t step, at::Tensor& param, at::Tensor& grad,
                          at::Tensor& exp_avg, at::Tensor& exp_avg_sq, int threads) {
  // The emulated device is the CPU: its fused Adam kernel is the SIMD one (CUDA uses
  // adam_step_device). Same kernel as CPU Adam, so offloading does not change the arithmetic.
  adam_step_cpu(cfg, step,
                AdamBuffers{param.data_ptr<float>(), grad.data_ptr<float>(), exp_avg.data_ptr<float>(),
                            exp_avg_sq.data_ptr<float>(), param.numel()},
                threads);
}

void EmulatedDevice::describe(nlohmann::json& meta) const {
  meta["compute_threads"] = compute_threads_;
  meta["link_GBps"] = h2d_.gbps();
}

}  // namespace protwin::rt
