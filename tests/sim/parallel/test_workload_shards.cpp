// The workload's tensor/context-parallel shards (sim/workload, WorkloadOptions tp and cp).
// Oracles: the shards' GEMM and attention flops add up to the unsharded layer exactly; Megatron's
// cut of a layer into sequence-parallel, column-parallel, attention and row-parallel pieces.
#include <catch2/catch.hpp>

#include "sim/workload/workload.h"
#include "traces/error.h"

using namespace protwin::sim;

namespace {
Workload shard(const ModelSpec& m, int64_t tp, int64_t cp, int64_t batch = 2, int64_t seq = 1024) {
  WorkloadOptions o;
  o.batch = batch;
  o.seq = seq;
  o.dtype = "bf16";
  o.tp = tp;
  o.cp = cp;
  return build_workload(m, o);
}

double matmul(const std::vector<protwin::traces::Kernel>& ks) {
  double s = 0;
  for (const auto& k : ks)
    if (k.sig.kind == "gemm" || k.sig.kind == "flash_attention") s += k.flops * static_cast<double>(k.count);
  return s;
}
}  // namespace

TEST_CASE("TP x CP shards of a layer add up to the unsharded layer", "[workload][parallel]") {
  for (const char* name : {"llama3.1-8b", "gpt2-small", "mistral-7b"}) {
    const ModelSpec m = find_model(name);
    const Workload full = shard(m, 1, 1);
    for (const auto& [tp, cp] : {std::pair<int64_t, int64_t>{2, 1}, {4, 2}, {1, 4}}) {
      const Workload w = shard(m, tp, cp);
      INFO(name << " tp " << tp << " cp " << cp);
      CHECK(matmul(w.layer(0).forward) * static_cast<double>(tp * cp) == Approx(matmul(full.layer(0).forward)).epsilon(1e-12));
      CHECK(matmul(w.layer(0).backward) * static_cast<double>(tp * cp) == Approx(matmul(full.layer(0).backward)).epsilon(1e-12));
      CHECK(w.tokens * cp == full.tokens);
      // Attention: a/t heads, cp ring steps of s/c x s/c.
      for (const auto& k : w.layer(0).forward)
        if (k.sig.kind == "flash_attention") {
          CHECK(k.count == cp);
          CHECK(k.sig.shape == std::vector<int64_t>{2 * m.heads / tp, 1024 / cp, 1024 / cp, m.head_dim()});
        }
      // The pipeline sends the sequence-parallel shard.
      CHECK(w.layer(0).input_bytes * tp * cp == full.layer(0).input_bytes);
    }
  }
}

TEST_CASE("a layer is cut where Megatron's tensor parallelism communicates", "[workload][parallel]") {
  const Workload w = shard(find_model("llama3.1-8b"), 2, 1);
  std::vector<Section> runs;
  for (const auto& t : w.layer(0).forward_tags)
    if (runs.empty() || runs.back() != t.section) runs.push_back(t.section);
  CHECK(runs == std::vector<Section>{Section::kShard, Section::kColumn, Section::kAttention, Section::kRow,
                                     Section::kShard, Section::kColumn, Section::kRow, Section::kShard});
  // Backward: one dW GEMM per forward GEMM (7 in a Llama layer), each right after its dX.
  const auto& bk = w.layer(0).backward;
  const auto& bt = w.layer(0).backward_tags;
  REQUIRE(bk.size() == bt.size());
  int dw = 0;
  for (size_t i = 0; i < bk.size(); ++i)
    if (bt[i].weight_grad) {
      ++dw;
      CHECK(bk[i].sig.kind == "gemm");
      CHECK((i > 0 && bk[i - 1].sig.kind == "gemm" && !bt[i - 1].weight_grad));
    }
  CHECK(dw == 7);
  const Workload h = shard(find_model("llama3.1-8b"), 2, 1);
  CHECK(h.blocks.front().forward_tags.front().section == Section::kEmbedding);
  CHECK(h.blocks.back().forward_tags.back().section == Section::kLoss);
}

TEST_CASE("bad TP/CP workload options name the flag", "[workload][parallel][errors]") {
  const ModelSpec m = find_model("llama3.1-8b");
  WorkloadOptions o;
  o.seq = 1024;
  o.cp = 2;
  o.flash_attention = false;
  CHECK_THROWS_WITH(build_workload(m, o), "--cp 2: context parallelism needs FlashAttention (its ring runs flash blocks)");
  o.flash_attention = true;
  o.cp = 3;
  CHECK_THROWS_WITH(build_workload(m, o), "--cp 3: sequence 1024 is not divisible by CP");
  o.cp = 1;
  o.tp = 3;
  CHECK_THROWS_WITH(build_workload(m, o), "--tp 3: heads 32, KV heads 8 and ffn_hidden 14336 of model 'llama3.1-8b' must all be divisible by TP");
  o.tp = 8;
  o.seq = 4;
  CHECK_THROWS_WITH(build_workload(m, o), "--tp 8: the 4 tokens of a micro-batch on one CP rank are not divisible by TP (sequence parallelism shards them)");
}
