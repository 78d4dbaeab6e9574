// The workload switches of what the measured frameworks ran (issue #18 item 4): sequence
// parallelism off, dropout, the gradient-reduction dtype, Megatron's vocab-parallel
// cross-entropy passes and vocabulary padding, and the --framework presets. Oracles: closed-form
// kernel counts, shapes and bytes on a tiny GPT, and closed-form collective counts and bytes of
// the compiled plan (Megatron's mpu/layers.py and cross_entropy.py, as cited in the compiler).
#include <catch2/catch.hpp>

#include <map>

#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/compiler/megatron_compiler.h"
#include "sim/workload/workload.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::parallel;

namespace {

// b = 2, s = 64, h = 128, a = 4, V = 1000: t = 128 tokens.
constexpr int64_t kB = 2, kS = 64, kH = 128, kA = 4, kV = 1000, kT = kB * kS;

ModelSpec tiny_gpt() { return resolve_model("gpt:hidden=128,layers=4,heads=4,vocab=1000,max_positions=64"); }

WorkloadOptions base(int64_t tp, const std::string& dtype = "fp16") {
  WorkloadOptions o;
  o.batch = kB;
  o.seq = kS;
  o.dtype = dtype;
  o.flash_attention = false;
  o.tp = tp;
  o.fused_projections = true;
  return o;
}

int count(const std::vector<traces::Kernel>& ks, const std::string& kind) {
  int n = 0;
  for (const auto& k : ks) n += k.sig.kind == kind ? 1 : 0;
  return n;
}

// Kinds of the collectives of one block (decoder layer 0 = block 1) in a one-micro-batch plan.
std::map<std::string, int> block_collectives(const ParallelPlan& p, int block) {
  std::map<std::string, int> n;
  for (const auto& op : p.plan.ops)
    if (op.block == block && (op.kind == traces::OpKind::kAllReduce || op.kind == traces::OpKind::kAllGather || op.kind == traces::OpKind::kReduceScatter))
      ++n[traces::to_string(op.kind)];
  return n;
}

ParallelPlan compile(const MegatronOptions& o) {
  return compile_megatron_plan(tiny_gpt(), o, place_groups(o.sizes, 8, 1));
}

MegatronOptions megatron(int64_t tp, int64_t dp) {
  MegatronOptions o;
  o.sizes = {tp, 1, 1, dp};
  o.mbs = kB;
  o.gbs = kB * dp;
  o.seq = kS;
  o.dtype = "fp16";
  o.flash_attention = false;
  o.describe_ops = true;
  return o;
}

}  // namespace

TEST_CASE("without sequence parallelism norms and residual work run on all tokens of every TP rank",
          "[workload][switches]") {
  WorkloadOptions o = base(2);
  const Workload sp = build_workload(tiny_gpt(), o);
  o.sequence_parallel = false;
  const Workload rep = build_workload(tiny_gpt(), o);
  for (const Workload* w : {&sp, &rep}) {
    const int64_t tokens = w == &sp ? kT / 2 : kT;
    for (const auto& k : w->layer(0).forward)
      if (k.sig.kind == "layernorm") CHECK(k.sig.shape == std::vector<int64_t>{tokens * kH});
    CHECK(w->layer(0).input_bytes == 2 * tokens * kH);
  }
  // GEMMs are sharded the same way either way.
  CHECK(count(sp.layer(0).forward, "gemm") == count(rep.layer(0).forward, "gemm"));
  // Without SP the token count need not divide by TP.
  WorkloadOptions odd = base(3);
  odd.batch = 1;
  odd.seq = 64;
  odd.sequence_parallel = false;
  CHECK_NOTHROW(build_workload(resolve_model("gpt:hidden=96,layers=2,heads=3,vocab=1000,max_positions=64"), odd));
}

TEST_CASE("TP collectives: all-reduces without sequence parallelism, all-gather/reduce-scatter with it",
          "[parallel][switches]") {
  MegatronOptions o = megatron(2, 1);
  // With SP (Korthikanti et al.): forward all-gather before QKV and fc1, reduce-scatter after
  // proj and fc2; backward all-gather of the output gradient before proj and fc2, all-gather of
  // the input for the dW of QKV and fc1 and reduce-scatter of their dX.
  const auto with = block_collectives(compile(o), 1);
  CHECK(with.at("all_gather") == 6);
  CHECK(with.at("reduce_scatter") == 4);
  CHECK(with.count("all_reduce") == 0);
  // Without (Megatron-LM 2021): forward all-reduce after proj and fc2 (_ReduceFromModelParallelRegion),
  // backward all-reduce of the dX of QKV and fc1 (_CopyToModelParallelRegion), nothing else.
  o.sequence_parallel = false;
  const ParallelPlan p = compile(o);
  const auto without = block_collectives(p, 1);
  CHECK(without.at("all_reduce") == 4);
  CHECK(without.count("all_gather") == 0);
  CHECK(without.count("reduce_scatter") == 0);
  // Each moves the full activation t x h in fp16 (NCCL-tests convention: the whole buffer).
  for (const auto& op : p.plan.ops)
    if (op.block == 1 && op.kind == traces::OpKind::kAllReduce) CHECK(op.work.bytes == 2 * kT * kH);
  // The embedding's vocab-parallel lookup is all-reduced too.
  CHECK(block_collectives(p, 0).at("all_reduce") == 1);
}

TEST_CASE("dropout: kernels and masks of hidden and attention-probability dropout", "[workload][switches]") {
  WorkloadOptions o = base(1);
  const Workload off = build_workload(tiny_gpt(), o);
  o.dropout = true;
  const Workload on = build_workload(tiny_gpt(), o);
  const int64_t n = kT * kH, scores = kB * kA * kS * kS, e = 2;
  // Attention probabilities (b a s s) and the two residual branches (t h).
  CHECK(count(off.layer(0).forward, "dropout") == 0);
  CHECK(count(on.layer(0).forward, "dropout") == 3);
  CHECK(count(on.layer(0).backward, "dropout") == 3);
  // Saved: three 1-byte masks and the dropped probabilities (PV's input, compute dtype).
  CHECK(on.layer(0).saved_bytes - off.layer(0).saved_bytes == scores + 2 * n + e * scores);
  // The embedding's dropout and its mask.
  CHECK(count(on.blocks.front().forward, "dropout") == 1);
  CHECK(on.blocks.front().saved_bytes - off.blocks.front().saved_bytes == n);

  // Megatron's bias_dropout_add_fused_train: dropout and residual add are one kernel (read 2,
  // write 1, mask 1 byte); the same masks are kept.
  o.fused_bias_dropout_add = true;
  const Workload fused = build_workload(tiny_gpt(), o);
  CHECK(count(fused.layer(0).forward, "dropout") == 3);
  CHECK(count(fused.layer(0).forward, "elementwise") == count(off.layer(0).forward, "elementwise") - 2);
  CHECK(fused.layer(0).saved_bytes == on.layer(0).saved_bytes);
  for (const auto& k : fused.layer(0).forward)
    if (k.sig.kind == "dropout" && k.sig.shape == std::vector<int64_t>{n}) CHECK(k.bytes == 3.0 * e * n + n);
}

TEST_CASE("PyTorch 1.8's bias passes: the QKV bias add, four bias-gradient reductions", "[workload][switches]") {
  for (int64_t tp : {1, 2}) {
    WorkloadOptions o = base(tp);
    o.sequence_parallel = false;
    const Workload off = build_workload(tiny_gpt(), o);
    o.bias_passes = true;
    const Workload on = build_workload(tiny_gpt(), o);
    const int64_t e = 2, qkv = kT * 3 * kH / tp, ffn = kT * 4 * kH / tp, n = kT * kH;
    auto bytes = [](const std::vector<traces::Kernel>& ks) {
      double b = 0;
      for (const auto& k : ks) b += k.bytes * static_cast<double>(k.count);
      return b;
    };
    // Forward: output.add_(bias) after the QKV matmul reads and writes the projection's output.
    CHECK(count(on.layer(0).forward, "elementwise") == count(off.layer(0).forward, "elementwise") + 1);
    CHECK(bytes(on.layer(0).forward) - bytes(off.layer(0).forward) == Approx(2.0 * e * qkv));
    // Backward: dY summed over the tokens for the QKV, output-projection, fc1 and fc2 biases.
    CHECK(count(on.layer(0).backward, "elementwise") == count(off.layer(0).backward, "elementwise") + 4);
    CHECK(bytes(on.layer(0).backward) - bytes(off.layer(0).backward) == Approx(e * (qkv + n + ffn + n)));
    CHECK(on.layer(0).saved_bytes == off.layer(0).saved_bytes);
  }
  // A model without biases has none of it.
  WorkloadOptions o = base(1);
  o.bias_passes = true;
  const ModelSpec nobias = resolve_model("gpt:hidden=128,layers=4,heads=4,vocab=1000,max_positions=64,bias=false");
  WorkloadOptions plain = base(1);
  CHECK(build_workload(nobias, o).layer(0).backward.size() == build_workload(nobias, plain).layer(0).backward.size());
}

TEST_CASE("Megatron's vocab-parallel cross-entropy: its passes over the fp32 logits", "[workload][switches]") {
  for (const std::string dtype : {"fp16", "fp32"}) {
    WorkloadOptions o = base(2, dtype);
    o.vocab_parallel_loss = true;
    const Workload w = build_workload(tiny_gpt(), o);
    const Block& head = w.blocks.back();
    const int64_t e = dtype == "fp16" ? 2 : 4, v = kV / 2, tv = kT * v;
    double fwd = 0, bwd = 0;
    int nf = 0, nb = 0;
    for (size_t i = 0; i < head.forward.size(); ++i)
      if (head.forward_tags[i].section == Section::kLoss) fwd += head.forward[i].bytes, ++nf;
    for (size_t i = 0; i < head.backward.size(); ++i)
      if (head.backward_tags[i].section == Section::kLoss) bwd += head.backward[i].bytes, ++nb;
    // Forward: logits.float() (fp16 only), max, sub_, exp, sum, div_ (each with the per-row fp32
    // statistic); backward: mul_ and the cast back.
    CHECK(nf == (e == 2 ? 6 : 5));
    CHECK(fwd == Approx((e == 2 ? (e + 4.0) * tv : 0.0) + 4.0 * (1 + 2 + 2 + 1 + 2) * tv + 5 * 4.0 * kT));
    CHECK(nb == (e == 2 ? 2 : 1));
    CHECK(bwd == Approx(8.0 * tv + (e == 2 ? (4.0 + e) * tv : 0.0)));
    bool saved = false;
    for (const auto& s : head.saved) saved = saved || (s.name == "loss.softmax" && s.bytes == 4 * tv);
    CHECK(saved);
  }
}

TEST_CASE("vocabulary padding to a multiple of 128 * TP (Megatron's _vocab_size_with_padding)",
          "[parallel][switches]") {
  CHECK(padded_vocab(50257, 128, 1) == 50304);
  CHECK(padded_vocab(50257, 128, 8) == 51200);
  CHECK(padded_vocab(51200, 128, 8) == 51200);
  CHECK(padded_vocab(1000, 128, 2) == 1024);
  MegatronOptions o = megatron(2, 1);
  o.pad_vocab = true;
  const ParallelPlan p = compile(o);
  // The LM head's GEMM is t x V/TP x h with V = 1024, and the model flops keep the real V.
  bool head_gemm = false;
  for (const auto& t : p.plan.ops)
    if (t.attrs.value("block", "") == "head" && t.kind == traces::OpKind::kForward)
      for (const auto& k : p.plan.kernels_of(t))
        head_gemm = head_gemm || (k.sig.kind == "gemm" && k.sig.shape == std::vector<int64_t>{kT, 512, kH});
  CHECK(head_gemm);
  CHECK(p.model_flops_per_token == Approx(compile(megatron(2, 1)).model_flops_per_token));
}

TEST_CASE("the gradient reduction moves params x the reduction dtype's bytes", "[parallel][switches]") {
  for (int bytes : {4, 2}) {
    MegatronOptions o = megatron(1, 2);
    o.grad_bytes = bytes;
    o.distributed_optimizer = false;
    const ParallelPlan p = compile(o);
    int64_t reduced = 0;
    for (const auto& op : p.plan.ops)
      if (op.kind == traces::OpKind::kAllReduce && op.stream.find("dp_comm") != std::string::npos) reduced += op.work.bytes;
    CHECK(reduced == p.stages.front().params * bytes);
  }
}

TEST_CASE("the framework presets (--framework) set the switches as each code base does", "[parallel][switches]") {
  MegatronOptions core;
  apply_framework_preset(core, "megatron-core");
  CHECK(core.sequence_parallel);
  CHECK_FALSE(core.dropout);
  CHECK(core.grad_bytes == 4);
  for (const char* fw : {"megatron-lm", "megatron-deepspeed"}) {
    for (const std::string dtype : {"fp16", "bf16"}) {
      MegatronOptions o;
      o.dtype = dtype;
      apply_framework_preset(o, fw);
      CHECK_FALSE(o.sequence_parallel);
      CHECK(o.dropout);
      CHECK(o.vocab_parallel_loss);
      CHECK(o.pad_vocab);
      CHECK(o.grad_bytes == (dtype == "fp16" ? 2 : 4));
    }
  }
  MegatronOptions o;
  CHECK_THROWS_WITH(apply_framework_preset(o, "megatron-xl"), Catch::Contains("--framework"));
}

TEST_CASE("an eager attention layer has one softmax kernel each way, beside the attention GEMMs", "[workload][switches]") {
  // With hwmodels pricing "attention" as its batched GEMMs only, this is the one place the
  // softmax is charged (tests/hwmodels kernel_time_test: the softmax is not in attention).
  for (const bool hf : {false, true}) {
    WorkloadOptions o = base(1);
    o.hf_eager = hf;
    const ModelSpec m = resolve_model("gpt2:hidden=128,layers=2,heads=4,vocab=1000,max_positions=64");
    const Workload w = build_workload(m, o);
    CHECK(count(w.layer(0).forward, "softmax") == 1);
    CHECK(count(w.layer(0).backward, "softmax") == 1);
    CHECK(count(w.layer(0).forward, "attention") == 1);
  }
}
