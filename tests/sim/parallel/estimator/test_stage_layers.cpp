// Uneven first/last pipeline stages (Megatron-LM's --decoder-first/last-pipeline-num-layers; Llama
// 3 405B at PP 16 with the first and last stage one layer short). Oracles: the layer counts of the
// Llama 3 paper (126 = 7 + 14 x 8 + 7) and hand-written splits; the memory of every stage by the
// closed forms of Fujii et al.'s terms (per layer 41 s b h for Llama-3.1-8B, embedding input
// 8 s b h, fp32 logits 4 s b h (1 + V/h)), in flight min(p - s, m) micro-batches on stage s.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "sim/parallel/estimator/estimate_methods.h"
#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/search/parallel_search.h"
#include "sim/parallel/estimator/stage_layers.h"
#include "tests/sim/parallel/estimator/estimate_fixtures.h"
#include "traces/error.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;
using namespace protwin::sim::test;
using Catch::Matchers::WithinRel;

TEST_CASE("stage layers: even, Llama 3's one-short ends, first or last alone", "[estimate][stages]") {
  CHECK(stage_layers(32, 4, {}) == std::vector<int64_t>{8, 8, 8, 8});
  const StageSplit llama3 = one_short_ends(126, 16);
  CHECK(llama3.first == 7);
  CHECK(llama3.last == 7);
  std::vector<int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  CHECK(stage_layers(126, 16, llama3) == expected);
  CHECK(stage_layers(10, 4, {1, 0}) == std::vector<int64_t>{1, 3, 3, 3});
  CHECK(stage_layers(10, 4, {0, 4}) == std::vector<int64_t>{2, 2, 2, 4});
  CHECK(stage_layers(10, 2, {3, 7}) == std::vector<int64_t>{3, 7});
  // Every PP that divides 128 but not 126, down to one layer on the ends; none where PP | L.
  for (int64_t pp : {4, 8, 16, 32, 64}) {
    const StageSplit s = one_short_ends(126, pp);
    INFO("pp " << pp);
    REQUIRE(s.uneven());
    const auto layers = stage_layers(126, pp, s);
    CHECK(std::accumulate(layers.begin(), layers.end(), int64_t{0}) == 126);
    CHECK(layers.front() + 1 == layers[1]);
    CHECK(layers.back() + 1 == layers[1]);
  }
  CHECK_FALSE(one_short_ends(126, 128).uneven());  // the ends would hold no layer
  CHECK_FALSE(one_short_ends(126, 2).uneven());
  CHECK_FALSE(one_short_ends(32, 4).uneven());     // even already
}

TEST_CASE("stage layers: impossible splits name the flag", "[estimate][stages][errors]") {
  CHECK_THAT(stage_split_problem(10, 4, {}), Catch::Contains("--pp 4: layers 10 is not divisible by PP 4"));
  CHECK_THAT(stage_split_problem(10, 4, {2, 0}), Catch::Contains("--first-stage-layers: the other 3 stages cannot"));
  CHECK_THAT(stage_split_problem(10, 4, {5, 4}), Catch::Contains("fewer than one layer"));
  CHECK_THAT(stage_split_problem(10, 1, {0, 3}), Catch::Contains("--last-stage-layers: uneven stages need --pp"));
  CHECK_THAT(stage_split_problem(10, 4, {-1, 0}), Catch::Contains("--first-stage-layers -1"));
  CHECK_THAT(stage_split_problem(10, 2, {3, 6}), Catch::Contains("must add up to the 10 layers"));
  CHECK_THROWS_AS(stage_layers(10, 4, {2, 0}), protwin::Error);
}

namespace {
// Fujii's per-stage closed form for Llama-3.1-8B at s 8192, b 1, TP t, DP d, CP 1, p stages, m
// micro-batches, flash attention, distributed optimizer, fp32 gradients.
double stage_bytes(int64_t stage, int64_t layers, int64_t p, int64_t m, int64_t t, int64_t d) {
  const double h = 4096, V = 128256, per_layer = 218112000;  // (P_tr - h) / L, P_tr = 6,979,588,096
  const bool first = stage == 0, last = stage == p - 1;
  const double n = (layers * per_layer + (first ? h * V : 0) + (last ? h * V + h : 0)) / t;
  const double states = n * (6.0 + 12.0 / d);
  const double in_flight = static_cast<double>(std::min(p - stage, m));
  double act = 41.0 * kSbh * layers * in_flight / t;
  if (first) act += 8.0 * kSbh / t * in_flight;
  if (last) act += 4.0 * kSbh * (1 + V / h) / t;
  return states + act;
}
}  // namespace

TEST_CASE("uneven stages: every stage's memory by Fujii's closed forms, the estimate is the largest",
          "[estimate][stages]") {
  const ModelSpec model = llama31_8b();
  for (const auto& [split, p, m, t, d] :
       {std::tuple<StageSplit, int64_t, int64_t, int64_t, int64_t>{{7, 7}, 4, 8, 2, 4}, {{7, 7}, 4, 2, 1, 8},
        {{5, 0}, 4, 16, 4, 2}, {{0, 2}, 4, 16, 1, 1}, {{15, 17}, 2, 4, 2, 2}}) {
    ParallelConfig c = layout(8192, 1, t, 1, p, d);
    c.split = split;
    EstimateOptions o;
    o.num_microbatches = m;
    const auto layers = stage_layers(model.layers, p, split);
    double largest = 0;
    int64_t largest_stage = -1;
    for (int64_t s = 0; s < p; ++s) {
      MemoryEstimate e;
      e.vocab_used = model.vocab;
      estimate_detail::fujii_stage(model, c, o, s, layers[static_cast<size_t>(s)], e);
      const double expected = stage_bytes(s, layers[static_cast<size_t>(s)], p, m, t, d);
      INFO("first " << split.first << " last " << split.last << " p " << p << " m " << m << " stage " << s);
      CHECK_THAT(e.weights_grads_optimizer_bytes + e.activation_layers_bytes + e.activation_embedding_bytes +
                     e.activation_output_bytes,
                 WithinRel(expected, 1e-12));
      if (expected > largest) largest = expected, largest_stage = s;
    }
    const MemoryEstimate e = estimate_memory(model, c, o);
    CHECK_THAT(e.total_bytes, WithinRel(largest, 1e-12));
    CHECK(e.stage == largest_stage);
    CHECK(e.stage_layers == layers[static_cast<size_t>(largest_stage)]);
  }
}

TEST_CASE("uneven stages: stage 0 of an even split is Fujii's first-stage estimate", "[estimate][stages]") {
  const ModelSpec model = llama31_8b();
  for (const auto& [p, m] : {std::pair<int64_t, int64_t>{2, 8}, {4, 8}, {4, 2}, {8, 64}}) {
    const ParallelConfig c = layout(8192, 1, 2, 1, p, 4);
    EstimateOptions o;
    o.num_microbatches = m;
    const MemoryEstimate first = estimate_memory(model, c, o);
    MemoryEstimate e;
    e.vocab_used = model.vocab;
    estimate_detail::fujii_stage(model, c, o, 0, model.layers / p, e);
    INFO("p " << p << " m " << m);
    CHECK_THAT(e.weights_grads_optimizer_bytes, WithinRel(first.weights_grads_optimizer_bytes, 1e-12));
    CHECK_THAT(e.activation_layers_bytes, WithinRel(first.activation_layers_bytes, 1e-12));
    CHECK_THAT(e.activation_embedding_bytes, WithinRel(first.activation_embedding_bytes, 1e-12));
  }
}

TEST_CASE("uneven stages: only the fujii method, only without virtual stages", "[estimate][stages][errors]") {
  ParallelConfig c = layout(8192, 1, 1, 1, 4, 1);
  c.split = {7, 7};
  EstimateOptions o;
  o.method = EstimateMethod::kMegatron;
  CHECK_THROWS_WITH(estimate_memory(llama31_8b(), c, o), Catch::Contains("only the fujii method"));
  o.method = EstimateMethod::kFujii;
  for (int64_t v : {1, 2}) {
    o.virtual_stages = v;
    CHECK_THROWS_WITH(estimate_memory(llama31_8b(), c, o), Catch::Contains("non-interleaved"));
  }
}

TEST_CASE("search: Llama 3.1 405B on 2,048 x 8 H100 fits only with uneven stages (Meta: PP 16, 7 + 14 x 8 + 7)",
          "[estimate][stages][search]") {
  ModelSpec m = test::llama_spec();
  m.name = "llama3.1-405b";
  m.hidden = 16384, m.ffn_hidden = 53248, m.layers = 126, m.heads = 128, m.kv_heads = 8, m.vocab = 128256;
  SearchSpace space;
  space.gpus = 16384, space.gpus_per_node = 8, space.gpu_memory_gb = 80, space.seq = 8192, space.gbs = 2048;
  EstimateOptions o;
  o.recompute = Recompute::kFull;
  const ParallelSearchResult even = search_parallel_configs(m, space, o);
  CHECK(even.fitting.empty());  // PP must divide 126 and 16384: PP <= 2
  space.uneven_stages = true;
  const ParallelSearchResult uneven = search_parallel_configs(m, space, o);
  REQUIRE_FALSE(uneven.fitting.empty());
  bool meta_layout = false;
  for (const auto& c : uneven.fitting) {
    CHECK(c.split.uneven());
    CHECK(c.pp * c.tp * c.cp * c.dp == 16384);
    if (c.tp == 8 && c.pp == 16 && c.split.first == 7 && c.split.last == 7) meta_layout = true;
  }
  CHECK(meta_layout);
}
