// Every feasibility rule of a 4D-parallel layout, with the exact message a user sees.
#include <catch2/catch.hpp>

#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/estimator/parallel_constraints.h"
#include "tests/sim/parallel/estimator/estimate_fixtures.h"
#include "traces/error.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;
using namespace protwin::sim::test;
using Catch::Matchers::Equals;

namespace {
std::string message_of(const ParallelConfig& c, const EstimateOptions& o = {},
                       ModelSpec m = llama31_8b()) {
  try {
    estimate_memory(m, c, o);
  } catch (const protwin::Error& e) {
    CHECK(e.exit_code() == 2);
    return e.what();
  }
  return "(no error)";
}
ConstraintKind kind_of(const ParallelConfig& c, const EstimateOptions& o = {}) {
  auto v = find_violation(llama31_8b(), c, o);
  REQUIRE(v);
  return v->kind;
}
}  // namespace

TEST_CASE("L % PP") {
  CHECK_THAT(message_of(layout(8192, 1, 1, 1, 3, 1)),
             Equals("--pp 3: layers 32 is not divisible by PP 3"));
  CHECK(kind_of(layout(8192, 1, 1, 1, 3, 1)) == ConstraintKind::kLayersPp);
}

TEST_CASE("heads % TP and KV heads % TP") {
  CHECK_THAT(message_of(layout(8192, 1, 3, 1, 1, 1)),
             Equals("--tp 3: heads 32 is not divisible by TP 3"));
  CHECK_THAT(message_of(layout(8192, 1, 16, 1, 1, 1)),
             Equals("--tp 16: KV heads 8 is not divisible by TP 16"));
  CHECK(kind_of(layout(8192, 1, 16, 1, 1, 1)) == ConstraintKind::kKvHeadsTp);
}

TEST_CASE("seq % (2·CP), only with context parallelism") {
  CHECK_THAT(message_of(layout(8200, 1, 1, 8, 1, 1)),
             Equals("--cp 8: sequence 8200 is not divisible by 2*CP 16"));
  CHECK_THAT(message_of(layout(8191, 1, 1, 1, 1, 1)), Equals("(no error)"));
}

TEST_CASE("GBS % (MBS·DP)") {
  ParallelConfig c = layout(8192, 2, 2, 1, 2, 32);
  c.gbs = 100;
  CHECK_THAT(message_of(c),
             Equals("--gbs 100: global batch 100 is not divisible by MBS*DP 64 (MBS 2, DP 32)"));
  c.gbs = 128;
  CHECK_THAT(message_of(c), Equals("(no error)"));
}

TEST_CASE("world size mismatch") {
  ParallelConfig c = layout(8192, 1, 2, 1, 2, 8);
  c.gpus = 64;
  CHECK_THAT(message_of(c),
             Equals("--gpus 64: TP*CP*PP*DP = 2*1*2*8 = 32 does not match 64 GPUs"));
  c.gpus = 32;
  CHECK_THAT(message_of(c), Equals("(no error)"));
}

TEST_CASE("virtual pipeline stages must divide the layers per stage") {
  EstimateOptions o;
  o.virtual_stages = 3;
  CHECK_THAT(message_of(layout(8192, 1, 1, 1, 2, 1), o),
             Equals("--virtual-stages 3: layers per stage 16 is not divisible by virtual stages 3"));
}

TEST_CASE("sizes below one and bad option values") {
  CHECK_THAT(message_of(layout(8192, 1, 0, 1, 1, 1)), Equals("--tp 0: must be at least 1"));
  CHECK_THAT(message_of(layout(0, 1, 1, 1, 1, 1)), Equals("--seq 0: must be at least 1"));
  ModelSpec m = llama31_8b();
  m.kv_heads = 0;
  CHECK_THAT(message_of(layout(8192, 1, 1, 1, 1, 1), {}, m),
             Equals("model llama3.1-8b: kv_heads 0 must be at least 1"));
  EstimateOptions o;
  o.zero_stage = 4;
  CHECK_THAT(message_of(layout(8192, 1, 1, 1, 1, 1), o),
             Equals("--zero-stage 4: expected 0, 1, 2 or 3"));
  CHECK_THROWS_WITH(parse_method("deepspeed"),
                    "--method deepspeed: unknown method; expected fujii, megatron, korthikanti, zero or fsdp");
  CHECK_THROWS_WITH(parse_recompute("some"),
                    "--recompute some: unknown recompute granularity; expected none, selective or full");
}

TEST_CASE("the first violated rule wins, in the authors' order") {
  // PP 3 and TP 3 both violate; the layer rule is checked first.
  CHECK(kind_of(layout(8192, 1, 3, 1, 3, 1)) == ConstraintKind::kLayersPp);
}

TEST_CASE("a world too large to count is refused naming the sizes, not a wrapped --gpus") {
  // 2^62 * 2 wrapped to a negative world before: "--gpus -9223372036854775808: must be at least 1".
  ParallelConfig c = layout(8192, 1, 2, 1, 1, int64_t{1} << 62);
  c.gpus = 8;
  CHECK_THAT(message_of(c), Equals("--tp/--cp/--pp/--dp: TP*CP*PP*DP = 2*1*1*4611686018427387904 is more than "
                                   "16777216 GPUs"));
  CHECK(kind_of(c) == ConstraintKind::kWorldSize);
  CHECK(world_size(1 << 12, 1, 1, 1 << 12) == int64_t{1} << 24);
  CHECK(world_size(1 << 12, 2, 1, 1 << 12) == -1);
  CHECK(world_size(INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX) == -1);
}

TEST_CASE("the shared option check bounds the vocabulary padding") {
  EstimateOptions o;
  o.pad_vocab_multiple = int64_t{1} << 62;
  CHECK_THROWS_WITH(check_estimate_options(o),
                    "--pad-vocab 4611686018427387904: expected at most 1048576 (Megatron pads to a multiple of 128)");
  o.pad_vocab_multiple = -1;
  CHECK_THROWS_WITH(check_estimate_options(o), "--pad-vocab -1: must be 0 (off) or a positive multiple");
  o = {};
  o.zero_stage = -1;
  CHECK_THROWS_WITH(check_estimate_options(o), "--zero-stage -1: expected 0, 1, 2 or 3");
}

TEST_CASE("a model too large to count exactly is refused, not counted negative") {
  ModelSpec m = llama31_8b();
  m.name = "huge";
  m.hidden = 4194304;
  m.ffn_hidden = 4 * 4194304;
  m.layers = 100000000;
  m.heads = m.kv_heads = 16;
  CHECK_THAT(message_of(layout(8192, 1, 1, 1, 1, 1), {}, m),
             Equals("model huge: about 2.81475e+22 parameters, more than the 1e+15 the estimator counts"));
  auto v = find_violation(m, layout(8192, 1, 1, 1, 1, 1));
  REQUIRE(v);
  CHECK(std::string(constraint_key(v->kind)) == "model_size");
}
