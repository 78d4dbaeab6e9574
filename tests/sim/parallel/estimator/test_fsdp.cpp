// torch FSDP FULL_SHARD's memory (sim/parallel/estimator/fsdp_estimator.cpp) against closed forms written
// from torch 2.0's flat parameters: 16 bytes per sharded element (fp32 shard, fp32 sharded grad,
// Adam's two states), each unit padded to a multiple of the world size, and on top the largest of
// three moments: forward (the root and two decoder units under limit_all_gathers, one
// low-precision shard), backward (the root's parameters and gradient; the unit computing, its
// gradient; the previous unit's gradient, its reduce-dtype copy and output shard; one
// low-precision shard) and the root's own reduce-scatter at the end.
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/search/parallel_search.h"
#include "tests/sim/parallel/estimator/estimate_fixtures.h"
#include "traces/error.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;
using namespace protwin::sim::test;
using Catch::Matchers::WithinRel;

namespace {

constexpr double kLayer = 13.0 * 4096 * 4096 + 2 * 4096;  // Llama-3.1-8B decoder layer: 218,112,000
constexpr double kRoot = 2.0 * 4096 * 128256 + 4096;      // embedding, LM head, final norm
constexpr double kPsi = 32 * kLayer + kRoot;              // 8,030,261,248

EstimateOptions fsdp(int param_bytes = 2, bool fp32_reduce = true) {
  EstimateOptions o;
  o.method = EstimateMethod::kFsdp;
  o.fsdp_param_bytes = param_bytes;
  o.fp32_grad_accum = fp32_reduce;
  return o;
}

// A GPT model without biases (MPT's shape), tied embeddings: one LayerNorm weight pair per layer.
ModelSpec mpt_like(int64_t hidden, int64_t layers, int64_t vocab) {
  ModelSpec m = gpt_spec();
  m.name = "mpt-like";
  m.hidden = hidden;
  m.ffn_hidden = 4 * hidden;
  m.layers = layers;
  m.heads = hidden / 128;
  m.kv_heads = m.heads;
  m.vocab = vocab;
  m.bias = false;
  return m;
}

}  // namespace

TEST_CASE("fsdp: Llama-3.1-8B on DP 8, bf16 units, fp32 reduce: the root's reduce-scatter is the peak",
          "[estimate][fsdp][closed-form]") {
  const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 1, 1, 1, 8), fsdp());
  REQUIRE(e.params_total == static_cast<int64_t>(kPsi));
  const double n = kLayer, r = kRoot;  // both divisible by 8: no padding
  CHECK(e.params_per_gpu == kPsi / 8);
  const double forward = 2 * r + 2 * 2 * n + 2 * n / 8;
  const double backward = 2 * 2 * r + 3 * 2 * n + 4 * n + 4 * n / 8 + 2 * n / 8;
  const double root = 2 * 2 * r + 4 * r + 4 * r / 8;
  CHECK(root > backward);
  CHECK(backward > forward);
  CHECK_THAT(e.fsdp_gathered_bytes, WithinRel(root, 1e-12));
  CHECK_THAT(e.weights_grads_optimizer_bytes, WithinRel(16 * kPsi / 8 + root, 1e-12));
  CHECK_THAT(e.bytes_per_param, WithinRel(e.weights_grads_optimizer_bytes / (kPsi / 8), 1e-12));
  // A SwiGLU model's activations are Fujii's at TP = CP = PP = 1, the same as the fujii method's.
  EstimateOptions fujii;
  const MemoryEstimate f = estimate_memory(llama31_8b(), layout(8192, 1, 1, 1, 1, 8), fujii);
  CHECK(e.activations_bytes == f.activations_bytes);
  CHECK(e.total_bytes == e.weights_grads_optimizer_bytes + e.activations_bytes);
  // Sharding everything: far below the replicated weights and gradients of Megatron's DP.
  CHECK(e.weights_grads_optimizer_bytes < 0.5 * f.weights_grads_optimizer_bytes);
}

TEST_CASE("fsdp: an MPT-7B-shaped model, tied embeddings, PURE bf16 reduce has no cast copy",
          "[estimate][fsdp][closed-form]") {
  // MPT-7B as the megatron-validation row gives it: d 4096, 32 layers, vocab 50368, no biases.
  const ModelSpec m = mpt_like(4096, 32, 50368);
  const double h = 4096, n = 12 * h * h + 2 * h, r = h * 50368 + h;
  const MemoryEstimate e = estimate_memory(m, layout(2048, 6, 1, 1, 1, 8), fsdp());
  REQUIRE(e.params_total == static_cast<int64_t>(32 * n + r));
  const double backward = 2 * 2 * r + 3 * 2 * n + 4 * n + 4 * n / 8 + 2 * n / 8;
  const double root = 2 * 2 * r + 4 * r + 4 * r / 8;
  CHECK(backward > root);  // a small root: a layer's backward is the peak
  CHECK_THAT(e.fsdp_gathered_bytes, WithinRel(backward, 1e-12));
  // PURE: the gradient is reduced in bf16 as computed, no reduce-dtype copy (flat_param.grad.dtype
  // == reduce dtype); the output shard is bf16.
  const MemoryEstimate pure = estimate_memory(m, layout(2048, 6, 1, 1, 1, 8), fsdp(2, false));
  // A GeLU model's activations are Korthikanti's: 34·sbh per layer + fp32 logits at TP 1.
  const double sbh = 2048.0 * 6 * h;
  CHECK_THAT(e.activations_bytes, WithinRel(34 * sbh * 32 + sbh + 4 * sbh * (1 + 50368 / h), 1e-12));
  CHECK_THAT(pure.fsdp_gathered_bytes, WithinRel(2 * 2 * r + 3 * 2 * n + 2 * n / 8 + 2 * n / 8, 1e-12));
  // fp32 units (no mixed precision) and an fp32 reduce: no copy either, 4-byte units.
  const MemoryEstimate full = estimate_memory(m, layout(2048, 6, 1, 1, 1, 8), fsdp(4, true));
  CHECK_THAT(full.fsdp_gathered_bytes, WithinRel(std::max(2 * 4 * r + 3 * 4 * n + 4 * n / 8 + 4 * n / 8,
                                                          2 * 4 * r + 4 * r / 8), 1e-12));
}

TEST_CASE("fsdp: every unit is padded to a multiple of the world size", "[estimate][fsdp][closed-form]") {
  // h 128, 2 layers, vocab 1000: layer 12·128² + 2·128, root 128·1000 + 128, neither divisible by 5.
  const ModelSpec m = mpt_like(128, 2, 1000);
  const int64_t n = 12 * 128 * 128 + 2 * 128, r = 128 * 1000 + 128, d = 5;
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  REQUIRE(n % d != 0);
  REQUIRE(r % d != 0);
  const MemoryEstimate e = estimate_memory(m, layout(64, 1, 1, 1, 1, d), fsdp());
  CHECK(e.params_per_gpu == static_cast<double>(2 * ceil_div(n, d) + ceil_div(r, d)));
  CHECK(e.weights_grads_optimizer_bytes == 16.0 * e.params_per_gpu + e.fsdp_gathered_bytes);
}

TEST_CASE("fsdp: TP, CP or PP > 1 is a constraint violation, the search keeps DP-only layouts",
          "[estimate][fsdp][search]") {
  CHECK_THROWS_WITH(estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 1, 4), fsdp()),
                    "--tp 2 --cp 1 --pp 1: FSDP FULL_SHARD shards over data parallelism only (TP, CP and PP must be 1)");
  SearchSpace space;
  space.gpus = 8;
  space.gpus_per_node = 8;
  space.gpu_memory_gb = 80;
  space.seq = 4096;
  space.gbs = 64;
  const ParallelSearchResult s = search_parallel_configs(llama31_8b(), space, fsdp());
  REQUIRE_FALSE(s.fitting.empty());
  for (const auto& c : s.fitting) CHECK((c.tp == 1 && c.cp == 1 && c.pp == 1 && c.dp == 8));
  CHECK(s.rejected_by_reason.at("fsdp_dp_only") > 0);
  // MBS 1 fits (16Ψ/8 + the root's reduce moment + Fujii's activations at s = 4096), MBS 2 not.
  CHECK(s.fitting.size() == 1);
  CHECK(s.fitting.front().mbs == 1);
  // Fujii's estimate of the same layout replicates bf16 weights and fp32 gradients: larger.
  EstimateOptions fujii;
  const MemoryEstimate m = estimate_memory(llama31_8b(), layout(4096, 1, 1, 1, 1, 8), fujii);
  CHECK(s.fitting.front().estimate.total_bytes < m.total_bytes);
}
