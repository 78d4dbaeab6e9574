// Oracle: torch::optim::Adam and torch::optim::AdamW (LibTorch 1.13.1) on the same random tensors,
// several steps, weight decay and bias correction on, sizes that are not multiples of any vector
// width; torch's own fp32 -> bf16/fp16 conversion for the low-precision copy.
#include "torch_catch.h"  // first: see there

#include <ATen/CPUGeneratorImpl.h>

#include "runtime/optim/bench_adam.h"
#include "runtime/optim/cpu_adam.h"
#include "runtime/optim/device_adam.h"
#include "traces/error.h"

using namespace protwin::rt;

namespace {

struct Case {
  int64_t n;
  int threads;
};

at::Tensor randn(int64_t n, at::Generator& gen) {
  return at::randn({n}, gen, at::TensorOptions().dtype(at::kFloat));
}

// Runs `steps` steps of protwin's CPU Adam (kernel k) and of torch's optimizer on identical inputs;
// returns the max |param difference| after the last step.
double compare_with_torch(const AdamConfig& cfg, AdamKernel kernel, Case c, int steps) {
  at::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(c.n);
  at::Tensor p = randn(c.n, gen), m = at::zeros({c.n}), v = at::zeros({c.n});
  at::Tensor tp = p.clone();
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (cfg.decoupled_weight_decay) {
    opt = std::make_unique<torch::optim::AdamW>(
        std::vector<at::Tensor>{tp}, torch::optim::AdamWOptions(cfg.lr)
                                         .betas({cfg.beta1, cfg.beta2})
                                         .eps(cfg.eps)
                                         .weight_decay(cfg.weight_decay));
  } else {
    opt = std::make_unique<torch::optim::Adam>(
        std::vector<at::Tensor>{tp}, torch::optim::AdamOptions(cfg.lr)
                                         .betas({cfg.beta1, cfg.beta2})
                                         .eps(cfg.eps)
                                         .weight_decay(cfg.weight_decay));
  }
  for (int s = 1; s <= steps; ++s) {
    at::Tensor g = randn(c.n, gen);
    tp.mutable_grad() = g.clone();
    opt->step();
    AdamBuffers b;
    b.params = p.data_ptr<float>();
    b.grads = g.data_ptr<float>();
    b.exp_avg = m.data_ptr<float>();
    b.exp_avg_sq = v.data_ptr<float>();
    b.n = c.n;
    adam_step_cpu(cfg, s, b, c.threads, kernel);
  }
  return (p - tp).abs().max().item<double>();
}

}  // namespace

TEST_CASE("CPU Adam and AdamW match torch::optim to 1e-6", "[runtime][adam]") {
  const bool decoupled = GENERATE(false, true);
  const AdamKernel kernel = GENERATE(AdamKernel::kScalar, AdamKernel::kAvx2, AdamKernel::kAvx512);
  const Case c = GENERATE(Case{1, 1}, Case{17, 1}, Case{1003, 2}, Case{262147, 3});
  if ((kernel == AdamKernel::kAvx512 && best_adam_kernel() != AdamKernel::kAvx512) ||
      (kernel == AdamKernel::kAvx2 && best_adam_kernel() == AdamKernel::kScalar)) {
    WARN("kernel " << to_string(kernel) << " not supported by this CPU; not tested");
    return;
  }
  AdamConfig cfg;
  cfg.lr = 1e-2;  // large enough that 5 steps move the params visibly
  cfg.beta1 = 0.8;
  cfg.beta2 = 0.95;
  cfg.eps = 1e-6;
  cfg.weight_decay = 0.1;
  cfg.decoupled_weight_decay = decoupled;
  INFO((decoupled ? "AdamW" : "Adam") << " kernel " << to_string(kernel) << " n " << c.n
                                      << " threads " << c.threads);
  const double diff = compare_with_torch(cfg, kernel, c, 5);
  INFO("max |p - p_torch| = " << diff);
  CHECK(diff <= 1e-6);
}

TEST_CASE("CPU Adam writes bf16 and fp16 copies bitwise equal to torch's conversion",
          "[runtime][adam]") {
  const LowPrecision lp = GENERATE(LowPrecision::kBf16, LowPrecision::kFp16);
  const AdamKernel kernel = GENERATE(AdamKernel::kScalar, AdamKernel::kAvx2, AdamKernel::kAvx512);
  if (kernel == AdamKernel::kAvx512 && best_adam_kernel() != AdamKernel::kAvx512) return;
  const int64_t n = 100003;
  at::Generator gen = at::detail::createCPUGenerator(42);
  at::Tensor p = randn(n, gen) * 3, g = randn(n, gen), m = at::zeros({n}), v = at::zeros({n});
  at::Tensor out = at::empty({n}, at::kShort);
  AdamBuffers b{p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(),
                v.data_ptr<float>(), n, reinterpret_cast<uint16_t*>(out.data_ptr<int16_t>()), lp};
  adam_step_cpu(AdamConfig{}, 1, b, 2, kernel);
  const at::Tensor ref = p.to(lp == LowPrecision::kBf16 ? at::kBFloat16 : at::kHalf).view(at::kShort);
  CHECK(at::equal(out, ref));
}

TEST_CASE("device Adam matches torch::optim::AdamW and the CPU kernel", "[runtime][adam]") {
  AdamConfig cfg;
  cfg.weight_decay = 0.01;
  cfg.decoupled_weight_decay = true;
  const int64_t n = 4099;
  at::Generator gen = at::detail::createCPUGenerator(3);
  at::Tensor p = randn(n, gen), m = at::zeros({n}), v = at::zeros({n});
  at::Tensor cp = p.clone(), cm = m.clone(), cv = v.clone(), tp = p.clone();
  torch::optim::AdamW opt({tp}, torch::optim::AdamWOptions(cfg.lr).weight_decay(cfg.weight_decay));
  for (int s = 1; s <= 4; ++s) {
    at::Tensor g = randn(n, gen);
    tp.mutable_grad() = g.clone();
    opt.step();
    adam_step_device(cfg, s, p, g, m, v);
    adam_step_cpu(cfg, s, AdamBuffers{cp.data_ptr<float>(), g.data_ptr<float>(),
                                      cm.data_ptr<float>(), cv.data_ptr<float>(), n});
  }
  CHECK((p - tp).abs().max().item<double>() <= 1e-6);
  CHECK((p - cp).abs().max().item<double>() <= 1e-6);
  CHECK((m - cm).abs().max().item<double>() <= 1e-6);
  CHECK((v - cv).abs().max().item<double>() <= 1e-6);
}

TEST_CASE("Adam refuses bad arguments with a precise message", "[runtime][adam]") {
  float x = 0;
  AdamBuffers b{&x, &x, &x, &x, 1};
  CHECK_THROWS_WITH(adam_step_cpu(AdamConfig{}, 0, b), "cpu adam: step must be >= 1, got 0");
  CHECK_THROWS_WITH(adam_step_cpu(AdamConfig{}, 1, b, 0), "cpu adam: threads must be >= 1, got 0");
  b.exp_avg = nullptr;
  CHECK_THROWS_WITH(adam_step_cpu(AdamConfig{}, 1, b),
                    "cpu adam: params, grads, exp_avg and exp_avg_sq must all be set");
  at::Tensor p = at::zeros({4}), g = at::zeros({5});
  CHECK_THROWS_WITH(adam_step_device(AdamConfig{}, 1, p, g, p, p),
                    "device adam: grad and optimizer states must match the parameter's shape [4], "
                    "device and dtype");
  CHECK_THROWS_WITH(bench_adam(0, 1), "--params must be positive, got 0");
}

TEST_CASE("bench_adam reports consistent derived numbers", "[runtime][adam]") {
  // Small size: checks the bookkeeping (params/s, speedup, 28 B/param), not the speed.
  const AdamBenchResult r = bench_adam(70001, 1, 1);
  CHECK(r.params == 70001);
  CHECK(r.bytes_per_param == 28);
  CHECK(r.protwin_params_per_s == Approx(70001 / r.protwin_seconds));
  CHECK(r.speedup == Approx(r.protwin_params_per_s / r.torch_params_per_s));
  CHECK(r.dram_GBps == Approx(28.0 * 70001 / r.protwin_seconds / 1e9));
}
