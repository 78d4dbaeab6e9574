// The alternative methods against hand-computed closed forms for Llama-3.1-8B.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/parallel/estimator/memory_estimate.h"
#include "tests/sim/parallel/estimator/estimate_fixtures.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;
using namespace protwin::sim::test;
using Catch::Matchers::WithinRel;

namespace {
constexpr double kH = 4096, kV = 128256, kS = 8192;
constexpr double kPsi = 8030261248.0;  // whole model
EstimateOptions with(EstimateMethod m) {
  EstimateOptions o;
  o.method = m;
  return o;
}
}  // namespace

TEST_CASE("megatron (upstream theoretical_memory_usage.py), SP + selective recompute branch") {
  EstimateOptions o = with(EstimateMethod::kMegatron);
  o.recompute = Recompute::kSelective;
  const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 1, 2), o);
  // Layer 2h(1.5·h_ffn + 1) + 2h²(1 + k/a) = 13h² + 2h; block 32·layer + h; N = block/2 + hV.
  const double block = 32 * (13 * kH * kH + 2 * kH) + kH;
  CHECK(e.params_per_gpu == block / 2 + kH * kV);
  CHECK(e.bytes_per_param == 6 + 12.0 / 2);
  // sbh(18 + 4·3.5)·L + 8sbp + sbhp + 4sbh(1 + V/h), all / t.
  const double act = ((18 + 14) * kSbh * 32 + 8 * kS + kSbh + 4 * kSbh * (1 + kV / kH)) / 2;
  CHECK_THAT(e.activations_bytes, WithinRel(act, 1e-12));
  CHECK_THAT(e.activations_bytes, WithinRel(577.125 * kSbh + 32768, 1e-12));
}

TEST_CASE("megatron without SP branch: sbh(10 + 24/t)·L + embeddings + bf16 logits, × 1.05") {
  EstimateOptions o = with(EstimateMethod::kMegatron);
  const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 2, 4), o);
  // p = 2: no output term; embedding terms for p micro-batches.
  const double act = ((10 + 24.0 / 2) * kSbh * 32 + 8 * kS * 2 + kSbh * 2) * 1.05;
  CHECK_THAT(e.activations_bytes, WithinRel(act, 1e-12));
  const MemoryEstimate f = estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 1, 4), o);
  const double act1 = ((10 + 12) * kSbh * 32 + 8 * kS + kSbh + (kS * kV / 2 + kSbh) * 2) * 1.05;
  CHECK_THAT(f.activations_bytes, WithinRel(act1, 1e-12));
  CHECK(f.bytes_per_param == 6 + 12.0 / 4);
}

TEST_CASE("korthikanti Table 2 per layer plus §4.3 embedding dropout and output layer") {
  const auto layoutc = layout(8192, 1, 2, 1, 1, 2);
  SECTION("TP + SP + flash attention: 34·sbh/t") {
    const MemoryEstimate e = estimate_memory(llama31_8b(), layoutc, with(EstimateMethod::kKorthikanti));
    CHECK_THAT(e.activations_bytes,
               WithinRel(34 * kSbh / 2 * 32 + kSbh / 2 + 4 * kSbh / 2 * (1 + kV / kH), 1e-12));
    CHECK_THAT(e.activations_bytes, WithinRel(609.125 * kSbh, 1e-12));
    // Model states as Fujii's.
    CHECK(e.params_per_gpu == 4015132672.0);
  }
  SECTION("TP + SP without flash attention: sbh(34/t + 5as/(ht))") {
    EstimateOptions o = with(EstimateMethod::kKorthikanti);
    o.flash_attention = false;
    const MemoryEstimate e = estimate_memory(llama31_8b(), layoutc, o);
    const double per_layer = kSbh * (34.0 / 2 + 5 * 32 * kS / (kH * 2));  // 177·sbh
    CHECK_THAT(e.activation_layers_bytes, WithinRel(per_layer * 32, 1e-12));
    CHECK_THAT(e.activation_layers_bytes, WithinRel(177 * 32 * kSbh, 1e-12));
  }
  SECTION("TP without SP, no flash: sbh(10 + 24/t + 5as/(ht)); embedding dropout sbhp") {
    EstimateOptions o = with(EstimateMethod::kKorthikanti);
    o.flash_attention = false;
    o.sequence_parallel = false;
    const MemoryEstimate e = estimate_memory(llama31_8b(), layoutc, o);
    CHECK_THAT(e.activation_layers_bytes, WithinRel(kSbh * (10 + 12 + 160) * 32, 1e-12));
    CHECK_THAT(e.activation_embedding_bytes, WithinRel(kSbh, 1e-12));
  }
  SECTION("full recompute: 2·sbh per layer") {
    EstimateOptions o = with(EstimateMethod::kKorthikanti);
    o.recompute = Recompute::kFull;
    const MemoryEstimate e = estimate_memory(llama31_8b(), layoutc, o);
    CHECK_THAT(e.activation_layers_bytes, WithinRel(2 * kSbh * 32, 1e-12));
  }
}

TEST_CASE("zero (paper): 4Ψ + 12Ψ/N_d, 2Ψ + 14Ψ/N_d, 16Ψ/N_d, activations not included") {
  const auto c = layout(8192, 1, 1, 1, 1, 8);
  EstimateOptions o = with(EstimateMethod::kZero);
  const double nd = 8;
  const double expected[] = {16 * kPsi, 4 * kPsi + 12 * kPsi / nd, 2 * kPsi + 14 * kPsi / nd,
                             16 * kPsi / nd};
  for (int stage = 0; stage <= 3; ++stage) {
    o.zero_stage = stage;
    const MemoryEstimate e = estimate_memory(llama31_8b(), c, o);
    INFO("stage " << stage);
    CHECK(e.params_per_gpu == kPsi);
    CHECK_THAT(e.weights_grads_optimizer_bytes, WithinRel(expected[stage], 1e-12));
    CHECK_FALSE(e.activations_included);
    CHECK(e.activations_bytes == 0);
    CHECK(e.total_bytes == e.weights_grads_optimizer_bytes);
  }
  // N_d counts DP·CP ranks.
  o.zero_stage = 3;
  CHECK_THAT(estimate_memory(llama31_8b(), layout(8192, 1, 1, 2, 1, 4), o).weights_grads_optimizer_bytes,
             WithinRel(16 * kPsi / 8, 1e-12));
}

TEST_CASE("zero (DeepSpeed estimators): 4Ψ + 16Ψ/N and 4·largest layer + 18Ψ/N") {
  const auto c = layout(8192, 1, 1, 1, 1, 8);
  EstimateOptions o = with(EstimateMethod::kZero);
  o.zero_formula = ZeroFormula::kDeepSpeed;
  o.zero_stage = 2;
  CHECK(estimate_memory(llama31_8b(), c, o).weights_grads_optimizer_bytes ==
        4 * kPsi + std::floor(16 * kPsi / 8));
  o.zero_stage = 3;  // largest module: the embedding (h·V)
  CHECK(estimate_memory(llama31_8b(), c, o).weights_grads_optimizer_bytes ==
        4 * kH * kV + std::floor(18 * kPsi / 8));
}
