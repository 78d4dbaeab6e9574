// The CUDA device seam. Oracles: exact --device messages; the emulated device through the
// Replayer seam gives bitwise the losses of the training loop (which uses PlanReplayer directly);
// on a GPU, a tiny offloaded plan's losses match the emulated device's within 1e-4 relative (GPU
// kernels sum in another order) and the plan's memory bound holds. Without a GPU or a CUDA
// LibTorch the CUDA case WARNs the reason and returns (Catch2 v2 has no SKIP).
#include "tests/runtime/torch_catch.h"

#include <cmath>
#include <random>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/cuda/device.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/model/transformer.h"
#include "runtime/train/byte_dataset.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/plan_fixtures.h"

namespace protwin::rt {
namespace {

constexpr int kSteps = 3;

// Losses of `steps` iterations of `rp` on `kind`, from seed-7 weights and the default data file.
std::vector<double> losses(const RuntimePlan& rp, DeviceKind kind, int64_t* peak = nullptr) {
  ReplayOptions ro;
  ro.threads = ThreadSplit::choose(1, rp.offloads, 1);
  std::unique_ptr<Replayer> r = make_replayer(rp, ro, kind);
  std::vector<at::Tensor> params = allocate_params(rp.model, at::TensorOptions().dtype(at::kFloat));
  init_params(rp.model, params, 7);
  r->load_params(params);
  const ByteDataset data(kDefaultDataFile, rp.seq);
  int64_t pos = data.start_position(7);
  std::vector<double> out;
  for (int s = 1; s <= kSteps; ++s) {
    at::Tensor tokens, targets;
    data.batch(pos, rp.batch, tokens, targets);
    StepResult step = r->step(tokens, targets, s);
    out.push_back(step.loss);
    if (peak) *peak = std::max(*peak, step.peak_device_bytes);
    pos = data.next_position(pos, rp.batch);
  }
  return out;
}

// An offloading plan of gpt2-tiny: CPU Adam, buffers, swap or checkpoint (seeded pick).
RuntimePlan offloaded_plan() {
  const sim::Workload w = testing::tiny_workload("gpt2-tiny");
  std::mt19937 rng(11);
  return make_runtime_plan(testing::compile_plan(w, testing::random_knobs(w, rng)), "test-plan.json");
}

TEST_CASE("device choice: --device takes auto or cuda or emulated and refuses cuda with the reason where it is missing", "[runtime][cuda]") {
  CHECK(resolve_device("emulated") == DeviceKind::kEmulated);
  CHECK(resolve_device("auto") == (cuda_device_available() ? DeviceKind::kCuda : DeviceKind::kEmulated));
  CHECK_THROWS_WITH(resolve_device("gpu"), "--device: expected auto, cuda or emulated, got \"gpu\"");
  if (!cuda_backend_compiled()) {
    CHECK_FALSE(cuda_device_available());
    CHECK_THROWS_WITH(resolve_device("cuda"), "--device cuda: this build's LibTorch has no CUDA (the CUDA backend "
                                              "in runtime/cuda/ was not compiled)");
  } else if (cuda_device_available()) {
    CHECK(resolve_device("cuda") == DeviceKind::kCuda);
  } else {
    CHECK_THROWS_WITH(resolve_device("cuda"),
                      "--device cuda: LibTorch sees no CUDA GPU (torch::cuda::is_available() is false)");
  }
}

TEST_CASE("the emulated device behind the Replayer seam is PlanReplayer", "[runtime][cuda]") {
  const RuntimePlan rp = offloaded_plan();
  ReplayOptions ro;
  std::unique_ptr<Replayer> r = make_replayer(rp, ro, DeviceKind::kEmulated);
  CHECK(std::string(r->device_name()) == "emulated");
  CHECK(dynamic_cast<PlanReplayer*>(r.get()) != nullptr);
  // The trainer drives PlanReplayer directly: same weights, data and threads give bitwise the
  // same losses.
  TrainOptions o;
  o.steps = kSteps;
  o.seed = 7;
  o.compute_threads = 1;
  CHECK(losses(rp, DeviceKind::kEmulated) == train(rp, o).losses);
}

TEST_CASE("a tiny offloaded plan on the CUDA device trains like the emulated device", "[runtime][cuda]") {
  if (!cuda_device_available()) {
    WARN("skipped: " << cuda_unavailable_reason());
    return;
  }
  const RuntimePlan rp = offloaded_plan();
  REQUIRE(rp.offloads);
  int64_t peak = 0;
  const std::vector<double> gpu = losses(rp, DeviceKind::kCuda, &peak);
  const std::vector<double> cpu = losses(rp, DeviceKind::kEmulated);
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) CHECK(std::abs(gpu[i] - cpu[i]) <= 1e-4 * std::abs(cpu[i]));
  CHECK(peak <= rp.gpu_high_water());
  CHECK(rp.gpu_high_water() <= rp.gpu_capacity());
}

}  // namespace
}  // namespace protwin::rt
