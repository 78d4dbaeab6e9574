// The simulator's prediction of the device memory the runtime allocates (sim/offload/analytic/
// runtime_memory.h, sim/workload/runtime_tensors.h). Oracles: closed forms of each op's saved
// tensors; the runtime's own caching allocator running the same block function (every op's
// peak and what it leaves behind); and end to end, the runtime's measured peak of whole plans.
#include "tests/runtime/torch_catch.h"

#include <cmath>
#include <random>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "hwmodels/hardware_cost_model.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/model/transformer.h"
#include "runtime/train/trainer.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/runtime_memory.h"
#include "sim/workload/runtime_tensors.h"
#include "tests/runtime/plan_fixtures.h"

namespace protwin::rt {
namespace {

int64_t r512(int64_t n) { return static_cast<int64_t>(traces::BlockAllocator::round_size(static_cast<size_t>(n))); }

// The model's architecture with one decoder layer (what one block function allocates).
ModelSpec config_of(ModelSpec m) {
  m.layers = 1;
  return m;
}

// What a block function allocates from the device's caching allocator: the high water above the
// start and the bytes it leaves. Small-pool requests only at these shapes, so blocks are exactly
// the rounded requests whichever cached block serves them.
struct Measured {
  int64_t peak = 0, left = 0;
};
template <typename F>
Measured measure(CachingAllocator& device, F&& body) {
  device.reset_peaks();
  const int64_t start = device.allocated().current;
  {
    AllocateOnThread on(&device);
    body();
  }
  return {device.allocated().peak - start, device.allocated().current - start};
}

void check_ops(const std::string& model, int64_t b, int64_t t) {
  const sim::ModelSpec spec = sim::resolve_model(model);
  const sim::RuntimeShapes s{spec, b, t};
  const ModelSpec cfg = config_of(spec);
  at::set_num_threads(1);
  std::vector<at::Tensor> params = allocate_params(cfg, at::TensorOptions().dtype(at::kFloat));
  init_params(cfg, params, 3);
  std::vector<at::Tensor> grads = allocate_params(cfg, at::TensorOptions().dtype(at::kFloat));
  ModelWeights w = bind_weights(cfg, params), g = bind_weights(cfg, grads);
  const at::Tensor tokens = at::randint(cfg.vocab, {b, t}, at::kLong);
  const at::Tensor targets = at::randint(cfg.vocab, {b, t}, at::kLong);
  const at::Tensor x = embedding_forward(cfg, w.embedding, tokens, nullptr);  // outside the device
  const int64_t btc = 4 * b * t * spec.hidden, btf = 4 * b * t * spec.ffn_hidden;
  const int64_t btk = 4 * b * t * spec.kv_heads * spec.head_dim(), att = 4 * b * spec.heads * t * t;
  const int64_t rows = r512(4 * b * t), raw_rows = 4 * b * t;
  INFO(model << " B=" << b << " T=" << t);

  // Closed forms of what the forward keeps (its input comes from the previous block).
  const sim::TensorProgram fwd = sim::layer_forward_tensors(s);
  const bool llama = spec.family == "llama";
  const int64_t tensors = llama ? 5 * btc + 2 * btk + att + 3 * btf : 7 * btc + att + 2 * btf;
  const int64_t saved = tensors + (llama ? 2 : 4) * rows, saved_raw = tensors + (llama ? 2 : 4) * raw_rows;
  CHECK(fwd.kept_bytes() == saved + btc);  // + the output

  // Each block function against the runtime's allocator. The programs leave out 0-dim scalars and
  // layer norm's per-thread scratch: at most a few 512-byte blocks.
  constexpr int64_t kSlack = 8 * 1024;
  auto check = [&](const char* what, const sim::TensorProgram& p, const Measured& m, int64_t left_extra) {
    INFO(what << ": predicted peak " << p.peak_bytes() << " left " << p.kept_bytes() << "; measured peak " << m.peak
              << " left " << m.left);
    CHECK(m.peak >= p.peak_bytes());
    CHECK(m.peak - p.peak_bytes() <= kSlack);
    CHECK(m.left == p.kept_bytes() + left_extra);
  };
  CachingAllocator device;  // outlives every tensor below
  LayerActs acts;
  at::Tensor y;
  check("layer forward", fwd, measure(device, [&] { y = layer_forward(cfg, w.layers[0], x, &acts); }), 0);
  CHECK(acts.bytes() == saved_raw + btc);  // LayerActs counts its input too, unrounded
  HeadActs head;
  at::Tensor loss;
  check("head forward", sim::head_forward_tensors(s), measure(device, [&] { loss = head_forward(cfg, w.head, y, targets, &head); }), 0);
  at::Tensor dx;
  check("head backward", sim::head_backward_tensors(s), measure(device, [&] { dx = head_backward(cfg, w.head, head, g.head); }), 0);
  at::Tensor dlayer;
  check("layer backward", sim::layer_backward_tensors(s),
        measure(device, [&] { dlayer = layer_backward(cfg, w.layers[0], acts, dx, g.layers[0]); }), 0);
  EmbeddingActs emb{tokens};
  check("embedding backward", sim::embedding_backward_tensors(s),
        measure(device, [&] { embedding_backward(cfg, emb, dlayer, g.embedding); }), 0);
  check("embedding forward", sim::embedding_forward_tensors(s),
        measure(device, [&] { (void)embedding_forward(cfg, w.embedding, tokens, nullptr); }), -btc);  // result dropped
  // A swap-in allocates every saved tensor densely: the same bytes as the forward's.
  int64_t swap_in = 0;
  for (int64_t n : sim::layer_saved_tensor_bytes(s)) swap_in += n;
  CHECK(swap_in == saved_raw + btc);
}

TEST_CASE("each op's tensors: closed forms and the runtime's caching allocator (gpt2-tiny, llama-tiny)",
          "[runtime][memory]") {
  for (const char* model : {"gpt2-tiny", "llama-tiny"}) {
    check_ops(model, 2, 16);
    check_ops(model, 3, 40);
  }
}

// A fast link keeps copies short beside the compute, whose simulated durations (the shipped
// profile's) differ from this loaded machine's.
constexpr double kLinkGBps = 20;

// End to end: a plan simulated on the emulated host machine, its runtime tensors replayed in that
// schedule, against the runtime's measured peak (the allocator's high water, max over steps), the
// runtime's copies throttled to that machine's link (as calibrate does).
void check_plans(const std::string& model, uint32_t seed, int policies) {
  const sim::Workload w = testing::tiny_workload(model, 4, 64);
  const hw::HardwareCostModel cost(testing::host_machine(kLinkGBps));
  std::mt19937 rng(seed);
  std::vector<traces::Plan> plans{testing::resident_plan(w)};
  for (int i = 0; i < policies; ++i) plans.push_back(testing::compile_plan(w, testing::random_knobs(w, rng)));
  for (const traces::Plan& plan : plans) {
    INFO(model << " knobs " << plan.meta["knobs"].dump() << " layer_modes " << plan.meta["layer_modes"].dump());
    const traces::Report schedule = sim::PlanSimulator(cost).run(plan);
    const sim::offload::RuntimeMemory predicted = sim::offload::predict_runtime_memory(plan, schedule);
    TrainOptions o;
    o.steps = 2;
    o.compute_threads = 1;
    o.link_gbps = kLinkGBps;
    const TrainResult r = train(make_runtime_plan(plan, "plan.json"), o);
    const double error = static_cast<double>(predicted.allocated_peak_bytes - r.peak_device_bytes) /
                         static_cast<double>(r.peak_device_bytes);
    // In the runtime's own schedule the tensors are exact up to the left-out scalars.
    const sim::offload::RuntimeMemory in_measured = sim::offload::predict_runtime_memory(plan, r.last_report);
    INFO("in the measured schedule " << in_measured.allocated_peak_bytes);
    CHECK(std::abs(in_measured.allocated_peak_bytes - r.peak_device_bytes) <= 0.05 * r.peak_device_bytes);
    INFO("predicted " << predicted.allocated_peak_bytes << " measured " << r.peak_device_bytes << " ("
                      << 100 * error << " %); the plan's bytes " << r.plan_peak_device_bytes);
    CHECK(std::abs(error) <= 0.05);
  }
}

TEST_CASE("the simulator predicts the runtime's measured device peak within 5 % (gpt2-tiny)", "[runtime][memory]") {
  check_plans("gpt2-tiny", 23, 6);
}

TEST_CASE("the simulator predicts the runtime's measured device peak within 5 % (llama-tiny)", "[runtime][memory]") {
  check_plans("llama-tiny", 24, 6);
}

}  // namespace
}  // namespace protwin::rt
