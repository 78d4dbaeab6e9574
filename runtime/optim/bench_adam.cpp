#include "runtime/optim/bench_adam.h"

#include <thread>
#include <vector>

#include <algorithm>
#include <chrono>
#include <limits>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/optim/adam.h>

#include "runtime/optim/cpu_adam.h"
#include "traces/error.h"

namespace protwin::rt {
namespace {

template <typename F>
double best_seconds(int repeats, F&& step) {
  step();  // warm-up: first touch of pages, torch's lazily created state
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

}  // namespace

AdamBenchResult bench_adam(int64_t params, int threads, int repeats) {
  PROTWIN_CHECK(params > 0, "--params must be positive, got ", params);
  PROTWIN_CHECK(threads >= 1, "--threads must be >= 1, got ", threads);
  PROTWIN_CHECK(repeats >= 1, "--repeats must be >= 1, got ", repeats);
  AdamConfig cfg;
  cfg.weight_decay = 0.01;
  AdamBenchResult r;
  r.params = params;
  r.threads = threads;
  r.repeats = repeats;
  r.kernel = to_string(best_adam_kernel());
  at::NoGradGuard no_grad;
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  {
    at::Tensor p = at::randn({params}, f32), g = at::randn({params}, f32);
    at::Tensor m = at::zeros({params}, f32), v = at::zeros({params}, f32);
    AdamBuffers b;
    b.params = p.data_ptr<float>();
    b.grads = g.data_ptr<float>();
    b.exp_avg = m.data_ptr<float>();
    b.exp_avg_sq = v.data_ptr<float>();
    b.n = params;
    int64_t step = 0;
    r.protwin_seconds = best_seconds(repeats, [&] { adam_step_cpu(cfg, ++step, b, threads); });
    // A STREAM-like in-place update over the same buffers and threads (a = 0.5 a + x: reads 8 B and
    // writes 4 B per element, no write-allocate, like Adam's in-place updates): the bandwidth
    // Adam is measured against.
    const double stream_s = best_seconds(repeats, [&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          const int64_t lo = params * t / threads, hi = params * (t + 1) / threads;
          float* __restrict a = b.exp_avg;  // restrict: lets the compiler vectorise the loop
          const float* __restrict x = b.grads;
          for (int64_t i = lo; i < hi; ++i) a[i] = 0.5f * a[i] + x[i];
        });
      for (auto& th : pool) th.join();
    });
    r.machine_dram_GBps = 12.0 * static_cast<double>(params) / stream_s / 1e9;
  }
  {
    const int saved_threads = at::get_num_threads();
    at::set_num_threads(threads);
    at::Tensor p = at::randn({params}, f32);
    p.mutable_grad() = at::randn({params}, f32);
    torch::optim::Adam opt({p}, torch::optim::AdamOptions(cfg.lr)
                                    .betas({cfg.beta1, cfg.beta2})
                                    .eps(cfg.eps)
                                    .weight_decay(cfg.weight_decay));
    r.torch_seconds = best_seconds(repeats, [&] { opt.step(); });
    at::set_num_threads(saved_threads);
  }
  const double n = static_cast<double>(params);
  r.protwin_params_per_s = n / r.protwin_seconds;
  r.torch_params_per_s = n / r.torch_seconds;
  r.speedup = r.protwin_params_per_s / r.torch_params_per_s;
  r.dram_GBps = static_cast<double>(r.bytes_per_param) * n / r.protwin_seconds / 1e9;
  r.fraction_of_dram = r.dram_GBps / r.machine_dram_GBps;
  return r;
}

}  // namespace protwin::rt
