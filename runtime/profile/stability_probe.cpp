#include "runtime/profile/stability_probe.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <thread>

#include "traces/error.h"

namespace protwin::rt {

std::vector<double> gemm_speed_samples(const StabilityOptions& o) {
  PROTWIN_CHECK(o.seconds > 0 && o.interval_s >= 0 && o.threads >= 1, "stability probe: bad options");
  using Clock = std::chrono::steady_clock;
  constexpr int64_t n = 256;
  constexpr int calls = 20;
  const int previous = at::get_num_threads();
  at::set_num_threads(o.threads);
  at::NoGradGuard no_grad;
  const at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::Tensor c = at::empty({n, n});
  for (int i = 0; i < calls; ++i) at::mm_out(c, a, b);  // warm-up
  std::vector<double> gflops;
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  do {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) at::mm_out(c, a, b);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    gflops.push_back(calls * 2.0 * n * n * n / dt / 1e9);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval_s));
  } while (Clock::now() < end);
  at::set_num_threads(previous);
  return gflops;
}

}  // namespace protwin::rt
