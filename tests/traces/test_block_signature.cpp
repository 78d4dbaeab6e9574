// The block signature (issue 22): a plan's compute op as one block of the runtime's model, the key
// `protwin profile` records whole blocks under. Oracle: the format in traces/block_signature.h.
#include <catch2/catch.hpp>

#include "tests/traces/plan_fixtures.h"
#include "traces/block_signature.h"
#include "traces/plan.h"

using namespace protwin::traces;

namespace {

Plan gpt2_plan(const std::string& family = "gpt2") {
  nlohmann::json j = small_plan_json();
  j["meta"]["batch"] = 4;
  j["meta"]["seq"] = 256;
  j["meta"]["dtype"] = "fp32";
  j["meta"]["model_spec"] = {{"family", family}, {"hidden", 256}, {"heads", 4},  {"kv_heads", 4},
                             {"ffn_hidden", 1024}, {"vocab", 256},  {"layers", 4}};
  j["ops"][1]["attrs"] = {{"block", "layer.2"}};
  return plan_from_json(j, "p.json");
}

}  // namespace

TEST_CASE("a decoder layer's forward, recompute and backward name the same block", "[traces][block]") {
  Plan p = gpt2_plan();
  const auto fwd = block_signature(p, p.ops[1]);
  REQUIRE(fwd.has_value());
  CHECK(fwd->key() == "block_forward.layer.gpt2:fp32:4x256x256x4x4x1024x256");
  p.ops[1].kind = OpKind::kRecompute;
  CHECK(block_signature(p, p.ops[1]) == fwd);
  p.ops[1].kind = OpKind::kBackward;
  CHECK(block_signature(p, p.ops[1])->kind == "block_backward.layer.gpt2");
  p.ops[1].attrs["block"] = "head";
  CHECK(block_signature(p, p.ops[1])->kind == "block_backward.head.gpt2");
  p.ops[1].attrs["block"] = "embedding";
  CHECK(block_signature(p, p.ops[1])->kind == "block_backward.embedding.gpt2");
}

TEST_CASE("ops that are not a block of a gpt2 or llama model have no block signature", "[traces][block]") {
  const Plan p = gpt2_plan();
  CHECK_FALSE(block_signature(p, p.ops[0]).has_value());  // an h2d
  CHECK_FALSE(block_signature(p, p.ops[2]).has_value());  // a free
  const Plan opt = gpt2_plan("opt");
  CHECK_FALSE(block_signature(opt, opt.ops[1]).has_value());
  Plan no_block = gpt2_plan();
  no_block.ops[1].attrs = nlohmann::json::object();
  CHECK_FALSE(block_signature(no_block, no_block.ops[1]).has_value());
  Plan no_meta = gpt2_plan();
  no_meta.meta.erase("batch");
  CHECK_FALSE(block_signature(no_meta, no_meta.ops[1]).has_value());
}

TEST_CASE("a plan's model_spec is read by the ModelSpec codec: family spellings, defaults, errors", "[traces][block]") {
  CHECK(block_signature(gpt2_plan("gpt"), gpt2_plan("gpt").ops[1])->kind == "block_forward.layer.gpt2");
  Plan no_kv = gpt2_plan();
  no_kv.meta["model_spec"].erase("kv_heads");  // kv_heads defaults to heads, as everywhere else
  CHECK(block_signature(no_kv, no_kv.ops[1]) == block_signature(gpt2_plan(), gpt2_plan().ops[1]));
  Plan bad = gpt2_plan();
  bad.meta["model_spec"]["heads"] = 3;
  CHECK_THROWS_WITH(block_signature(bad, bad.ops[1]),
                    Catch::Contains("p.json:/meta/model_spec/heads: hidden 256 is not divisible by heads 3"));
}

TEST_CASE("a block signature reads back as the block it names, other kinds do not", "[traces][block]") {
  const BlockShape b{"backward", "head", "llama", 2, 128, 256, 8, 2, 688, 256};
  const OpSignature sig = block_signature(b, "fp32");
  const auto back = block_shape_of(sig);
  REQUIRE(back.has_value());
  CHECK(back->pass == "backward");
  CHECK(back->role == "head");
  CHECK(back->family == "llama");
  CHECK(std::vector<int64_t>{back->batch, back->seq, back->hidden, back->heads, back->kv_heads, back->ffn_hidden,
                             back->vocab} == sig.shape);
  CHECK_FALSE(block_shape_of({"gemm", {1, 2, 3}, "fp32"}).has_value());
  CHECK_FALSE(block_shape_of({"block_forward.layer.opt", sig.shape, "fp32"}).has_value());
  CHECK_FALSE(block_shape_of({"block_sideways.layer.gpt2", sig.shape, "fp32"}).has_value());
  CHECK_FALSE(block_shape_of({"block_forward.layer.gpt2", {1, 2, 3}, "fp32"}).has_value());
  CHECK_FALSE(block_shape_of({"block_forward.layer.gpt2", {4, 256, 0, 4, 4, 1024, 256}, "fp32"}).has_value());
}

TEST_CASE("pooled over rounds, a block is the median of the rounds, every other entry their pooled mean", "[traces][block]") {
  const OpSignature block = block_signature({"forward", "layer", "gpt2", 4, 256, 256, 4, 4, 1024, 256}, "fp32");
  const OpSignature gemm{"gemm", {1024, 768, 256}, "fp32"};
  std::vector<OpProfile> rounds;
  for (double t : {55.0, 863.0, 63.0}) {  // one round preempted
    OpProfile r("emulated", "measured", "test");
    OpProfileEntry b, g;
    b.sig = block;
    b.us.add(t);
    g.sig = gemm;
    g.us.add(t / 10);
    r.add(b);
    r.add(g);
    rounds.push_back(r);
  }
  OpProfile pooled = rounds[0];
  pooled.merge(rounds[1]);
  pooled.merge(rounds[2]);
  const OpProfile p = with_block_medians(pooled, rounds);
  CHECK(p.find(block)->us.mean == 63.0);
  CHECK(p.find(gemm)->us.mean == Approx((5.5 + 86.3 + 6.3) / 3));
  CHECK(p.find(gemm)->us.count == 3);
  CHECK(without_blocks(p).find(block) == nullptr);
  CHECK(without_blocks(p).find(gemm) != nullptr);
}
