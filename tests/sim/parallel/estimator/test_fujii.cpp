// Fujii et al.'s estimator against the authors' own unit-test values (okoge-kaz/Megatron-LM
// tools/memory_estimate/tests_memory_consumption_estimator.py, REFERENCE §3) and, for every switch,
// against the closed form of the term it changes.
#include <catch2/catch.hpp>

#include "sim/parallel/estimator/estimate_json.h"
#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/workload/model_spec.h"
#include "tests/sim/parallel/estimator/estimate_fixtures.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;
using namespace protwin::sim::test;
using Catch::Matchers::WithinRel;

TEST_CASE("Llama-3.1-8B parameter count from the formula is the published 8,030,261,248") {
  const ModelSpec m = llama31_8b();
  CHECK(parameter_count(m, m.vocab) == 8030261248LL);
  CHECK(transformer_parameter_count(m) == 6979588096LL);  // P_tr incl. final norm
}

TEST_CASE("the formula's count equals the parameter layout's for every Llama-family zoo model") {
  // Oracle: the one parameter layout (traces/parameter_layout.h), tensor by tensor.
  for (const std::string& name : model_names()) {
    const ModelSpec m = find_model(name);
    if (m.family != "llama") continue;
    INFO(name);
    CHECK(parameter_count(m, m.vocab) == m.parameter_count());
  }
}

TEST_CASE("authors' four unit-test cases to 1e-9 relative") {
  struct Case { int64_t b, t, c, p, d; double wgo, act; };
  const Case cases[] = {
      {1, 2, 1, 1, 2, 44.87260437011719, 22.64453125},
      {1, 1, 2, 1, 2, 67.30887222290039, 22.64453125},
      {1, 2, 1, 2, 32, 11.919273376464844, 20.75},
      {2, 2, 2, 1, 32, 23.137436628341675, 22.64453125},
  };
  for (const Case& k : cases) {
    INFO("b " << k.b << " t " << k.t << " c " << k.c << " p " << k.p << " d " << k.d);
    const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, k.b, k.t, k.c, k.p, k.d));
    CHECK_THAT(e.weights_grads_optimizer_gib(), WithinRel(k.wgo, 1e-9));
    CHECK_THAT(e.activations_gib(), WithinRel(k.act, 1e-9));
    CHECK_THAT(e.total_gib(), WithinRel(k.wgo + k.act, 1e-9));
  }
}

TEST_CASE("per-layer activations are 41·s·b·h/t for Llama-3.1-8B") {
  // 12 + 4k/a = 13 and 8·h_ffn/h = 28.
  const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 1, 1, 2, 1));
  CHECK_THAT(e.activation_layers_bytes, WithinRel(41.0 * kSbh * 32, 1e-12));
}

namespace {
// Case 1 of the authors' table, with switches changed.
MemoryEstimate case1(const EstimateOptions& o, ModelSpec m = llama31_8b()) {
  return estimate_memory(m, layout(8192, 1, 2, 1, 1, 2), o);
}
constexpr double kN1 = 4015132672.0;  // params on the first stage of case 1 (hand-computed)
}  // namespace

TEST_CASE("model-state switches change bytes per parameter and the parameter count") {
  EstimateOptions o;
  CHECK(case1(o).params_per_gpu == kN1);
  CHECK(case1(o).bytes_per_param == 6.0 + 12.0 / 2);
  o.distributed_optimizer = false;
  CHECK_THAT(case1(o).weights_grads_optimizer_bytes, WithinRel(kN1 * 18, 1e-12));
  o.fp32_grad_accum = false;
  CHECK_THAT(case1(o).weights_grads_optimizer_bytes, WithinRel(kN1 * 16, 1e-12));
  o.distributed_optimizer = true;
  CHECK_THAT(case1(o).weights_grads_optimizer_bytes, WithinRel(kN1 * (4 + 6), 1e-12));

  // Tied embeddings: no LM head and (as in the authors' code) no final norm on stage 1.
  ModelSpec tied = llama31_8b();
  tied.tied_embeddings = true;
  CHECK(case1({}, tied).params_per_gpu == (6979588096.0 - 4096 + 4096.0 * 128256) / 2);
  CHECK(parameter_count(tied, tied.vocab) == 8030261248LL - 4096LL * 128256);
}

TEST_CASE("vocabulary padding follows Megatron (multiple of 128·TP)") {
  CHECK(padded_vocab(50257, 128, 1) == 50304);  // GPT-2's well-known padded vocabulary
  CHECK(padded_vocab(128256, 128, 2) == 128256);
  CHECK(padded_vocab(128256, 128, 8) == 129024);
  CHECK(padded_vocab(128256, 0, 8) == 128256);
  EstimateOptions o;
  o.pad_vocab_multiple = 128;
  const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 8, 1, 1, 1), o);
  CHECK(e.vocab_used == 129024);
  CHECK(e.params_total == 6979588096LL + 2LL * 4096 * 129024);
}

TEST_CASE("activation switches change exactly their own terms") {
  const EstimateOptions base;
  const double act0 = case1(base).activations_bytes;  // 724.625·sbh (22.64453125 GiB)
  CHECK_THAT(act0, WithinRel(724.625 * kSbh, 1e-12));
  const double s = 8192, a = 32, t = 2, L = 32;

  SECTION("upstream embedding-input term 8·s·b·p/t instead of 8·s·b·h·p/t") {
    EstimateOptions o;
    o.embedding_input = EmbeddingInputTerm::kUpstream;
    CHECK_THAT(case1(o).activations_bytes, WithinRel(act0 - 8 * kSbh / t + 8 * s / t, 1e-12));
  }
  SECTION("hidden dropout adds two s·b·h masks per layer and the embedding mask") {
    EstimateOptions o;
    o.hidden_dropout = 0.1;
    CHECK_THAT(case1(o).activations_bytes, WithinRel(act0 + 2 * kSbh * L / t + kSbh, 1e-12));
  }
  SECTION("without flash attention the s² score terms come back (4·b·s²·a per layer)") {
    EstimateOptions o;
    o.flash_attention = false;
    CHECK_THAT(case1(o).activations_bytes, WithinRel(act0 + 4 * s * s * a * L / t, 1e-12));
    o.attention_dropout = 0.1;  // + b·s²·a dropout mask
    CHECK_THAT(case1(o).activations_bytes, WithinRel(act0 + 5 * s * s * a * L / t, 1e-12));
    o.recompute = Recompute::kSelective;  // selective recompute drops them again
    CHECK_THAT(case1(o).activations_bytes, WithinRel(act0, 1e-12));
  }
  SECTION("full recompute keeps 2·s·b·h per layer") {
    EstimateOptions o;
    o.recompute = Recompute::kFull;
    CHECK_THAT(case1(o).activations_bytes, WithinRel(act0 - 41 * kSbh * L / t + 2 * kSbh * L / t, 1e-12));
  }
  SECTION("interleaved schedule multiplies stage activations by 1 + (p-1)/(p·v)") {
    EstimateOptions o;
    o.virtual_stages = 2;
    const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 4, 1), o);
    const double plain = (41 * kSbh * L + 8 * kSbh * 4) / t;
    CHECK(e.activation_schedule_factor == 1 + 3.0 / 8);
    CHECK_THAT(e.activations_bytes, WithinRel(plain * (1 + 3.0 / 8), 1e-12));
  }
  SECTION("fewer micro-batches than stages: × min(1, m/p)") {
    EstimateOptions o;
    o.num_microbatches = 2;
    const MemoryEstimate e = estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 4, 1), o);
    CHECK_THAT(e.activations_bytes, WithinRel((41 * kSbh * L + 8 * kSbh * 4) / t * 0.5, 1e-12));
    o.num_microbatches = 64;
    const MemoryEstimate f = estimate_memory(llama31_8b(), layout(8192, 1, 2, 1, 4, 1), o);
    CHECK_THAT(f.activations_bytes, WithinRel((41 * kSbh * L + 8 * kSbh * 4) / t, 1e-12));
  }
}

TEST_CASE("JSON carries the documented keys, fits_80pct is null without GPU memory") {
  const MemoryEstimate e = case1({});
  const auto j = estimate_to_json(e);
  for (const char* key : {"params_per_gpu", "bytes_per_param", "weights_grads_optimizer_GiB",
                          "activations_GiB", "total_GiB", "fits_80pct"})
    CHECK(j.contains(key));
  CHECK(j["fits_80pct"].is_null());
  // 67.517 GiB: over 0.8·80 = 64, under 0.8·94 = 75.2.
  CHECK(estimate_to_json(e, 80.0)["fits_80pct"] == false);
  CHECK(estimate_to_json(e, 94.0)["fits_80pct"] == true);
}
