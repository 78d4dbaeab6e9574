#include "runtime/profile/stability_probe.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <thread>
#include <vector>

#include "runtime/memory/copy_engine.h"
#include "runtime/optim/cpu_adam.h"

#include "runtime/memory/speed_throttle.h"
#include "runtime/memory/thread_split.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {
constexpr int64_t kN = 256;
constexpr int kCalls = 20;
// The reference probe runs longer (about 20 ms at 100 GFLOPS): a shorter one mostly measures which
// scheduler slices it happened to get on a loaded machine.
constexpr int kReferenceCalls = 60;
constexpr int kWarmCalls = 10;  // untimed, before every reference probe

// GFLOPS of `calls` GEMMs c = a b, stretched by the emulated slowdown.
double time_gemms(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, int calls) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) at::mm_out(c, a, b);
  stretch(std::chrono::duration<double>(Clock::now() - t0).count());
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  return calls * 2.0 * kN * kN * kN / dt / 1e9;
}
}  // namespace

std::vector<double> gemm_speed_samples(const StabilityOptions& o) {
  PROTWIN_CHECK(o.seconds > 0 && o.interval_s >= 0 && o.threads >= 1, "stability probe: bad options");
  using Clock = std::chrono::steady_clock;
  const int previous = at::get_num_threads();
  set_compute_threads(o.threads);
  at::NoGradGuard no_grad;
  const at::Tensor a = at::randn({kN, kN}), b = at::randn({kN, kN});
  at::Tensor c = at::empty({kN, kN});
  for (int i = 0; i < kCalls; ++i) at::mm_out(c, a, b);  // warm-up
  std::vector<double> gflops;
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  do {
    gflops.push_back(time_gemms(a, b, c, kCalls));
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval_s));
  } while (Clock::now() < end);
  set_compute_threads(previous);
  return gflops;
}

double reference_gemm_gflops() {
  at::NoGradGuard no_grad;
  static const at::Tensor a = at::randn({kN, kN}), b = at::randn({kN, kN});
  static at::Tensor c = [] {
    at::Tensor t = at::empty({kN, kN});
    for (int i = 0; i < kCalls; ++i) at::mm_out(t, a, b);  // warm-up, once per process
    return t;
  }();
  // Warm again every time: the probe runs after whatever came before it (a profiled op, a training
  // step), and the first GEMMs after other work pay for its cache state rather than the machine's
  // speed, which would make the profile's reference and the steps' probes incomparable.
  for (int i = 0; i < kWarmCalls; ++i) at::mm_out(c, a, b);
  return time_gemms(a, b, c, kReferenceCalls);
}

double reference_copy_gbps(double link_gbps) {
  constexpr size_t kBytes = size_t{1} << 20;  // one slice of the copy engine: 4 ms at 0.25 GB/s
  static std::vector<char> src(kBytes, 1), dst(kBytes);
  CopyEngine engine(link_gbps);
  const auto t0 = std::chrono::steady_clock::now();
  engine.copy(dst.data(), src.data(), kBytes);
  return static_cast<double>(kBytes) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
         1e-9;
}

double reference_adam_mparams_per_s() {
  constexpr int64_t kN = int64_t{1} << 18;  // about 1 ms on one core
  static std::vector<float> p(kN, 0.1f), g(kN, 0.01f), m(kN, 0.f), v(kN, 0.f);
  adam_step_cpu(AdamConfig{}, 1, AdamBuffers{p.data(), g.data(), m.data(), v.data(), kN}, 1);  // untimed: warm
  const auto t0 = std::chrono::steady_clock::now();
  adam_step_cpu(AdamConfig{}, 1, AdamBuffers{p.data(), g.data(), m.data(), v.data(), kN}, 1);
  return static_cast<double>(kN) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e-6;
}

}  // namespace protwin::rt
