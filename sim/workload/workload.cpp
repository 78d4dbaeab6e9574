// Decomposition of a ModelSpec into blocks and kernels (see workload.h for the conventions).
//
// Notation: b batch, s seq, t = b*s tokens, h hidden, a heads, k kv heads, d = h/a head dim,
// kv = k*d, f ffn hidden, V vocab, e bytes per element of the compute dtype.
// With TP/CP (see workload.h) s is this rank's s/cp, t = b*s/cp, and the `_l` sizes are the
// rank's share: hq = h/tp, kv_l = kv/tp, f_l = f/tp, V_l = ceil(V/tp); `ts` = t/tp tokens of the
// sequence-parallel shard, n_s = ts*h. At tp = cp = 1 all of them equal the unsharded sizes.
#include "sim/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "traces/error.h"
#include "traces/kernel_kinds.h"

namespace protwin::sim {

namespace kk = traces::kernel_kinds;  // the kernel-kind registry

namespace {

using traces::Kernel;
using traces::OpSignature;

// Forward flops per element of the non-GEMM kernels (the usual textbook counts; these kernels
// are memory-bound, so their flops only enter totals, where they are < 1 %):
constexpr double kLayerNormFlops = 8;  // mean, x-mean, square, variance, rsqrt-scale, gamma, beta
constexpr double kRmsNormFlops = 4;    // square, mean, rsqrt-scale, gamma
constexpr double kGeluFlops = 8;       // tanh approximation
constexpr double kReluFlops = 1;
constexpr double kSwigluFlops = 5;     // sigmoid (3), x*sigmoid, *up
constexpr double kSoftmaxFlops = 5;    // scale+mask, max, exp, sum, divide (fused, as in Megatron)
constexpr double kDropoutFlops = 2;    // draw + select/scale
constexpr double kAddFlops = 1;
constexpr double kRopeFlops = 3;       // x*cos + rotate(x)*sin
constexpr double kCrossEntropyFlops = 5;  // per logit: max, subtract, exp, sum, log/pick
constexpr double kBackwardFactor = 2;     // backward = 2x forward (model-flops convention)

Kernel kernel(const std::string& kind, std::vector<int64_t> shape, const std::string& dtype,
              double flops, double bytes) {
  Kernel k;
  k.sig = OpSignature{kind, std::move(shape), dtype};
  k.flops = flops;
  k.bytes = bytes;
  return k;
}

// One forward op of a block: its kernel, the kernels its backward runs, and the temporaries
// (bytes not kept for backward) live while each runs.
struct Op {
  Kernel fwd;               // kind "" for backward-only work
  std::vector<Kernel> bwd;
  int64_t fwd_live = 0;
  int64_t bwd_live = 0;
  bool linear = false;  // bwd = {dX, dW}
  Section section = Section::kShard;  // set by BlockBuilder::push
};

class BlockBuilder {
 public:
  BlockBuilder(const ModelSpec& m, const WorkloadOptions& o)
      : m_(m), o_(o), dt_(o.dtype), e_(traces::dtype_bytes(o.dtype)),
        t_(o.batch * (o.seq / o.cp)), ts_(o.sequence_parallel ? t_ / o.tp : t_), h_(m.hidden) {}

  // Ops added from now on belong to section `s`.
  void section(Section s) { section_ = s; }

  // Y[m,n] = X[m,k] W[k,n] (+ bias, fused: addmm). Backward: dX[m,k] = dY W^T -> gemm {m,k,n},
  // dW[k,n] = X^T dY -> gemm {k,n,m}; each 2mnk flops. (The bias gradient, a row sum of dY, is
  // folded into the dW GEMM.)
  void gemm(int64_t m, int64_t n, int64_t k, int64_t fwd_live, int64_t bwd_live) {
    push({gemm_kernel(m, n, k), {gemm_kernel(m, k, n), gemm_kernel(k, n, m)}, fwd_live, bwd_live, true});
  }

  // With bias_passes, a linear's bias gradient: one reduction of dY (m x n) over the tokens,
  // backward only.
  void bias_grad(int64_t m, int64_t n) {
    if (!o_.bias_passes || !m_.bias) return;
    push({Kernel{}, {kernel(kk::kElementwise, {m * n}, dt_, static_cast<double>(m * n), static_cast<double>(e_ * m * n))},
          0, 0});
  }

  // An elementwise-like kernel over `n` elements: reads `reads` and writes `writes` tensors of n
  // elements in forward; backward reads `bwd_reads` and writes `bwd_writes` of them.
  void pointwise(const std::string& kind, int64_t n, double flops_per_elem, double reads,
                 double writes, double bwd_reads, double bwd_writes, int64_t fwd_live,
                 int64_t bwd_live, double extra_fwd_bytes = 0, double extra_bwd_bytes = 0) {
    const double f = flops_per_elem * static_cast<double>(n);
    Op op{kernel(kind, {n}, dt_, f, (reads + writes) * e_ * n + extra_fwd_bytes), {}, fwd_live, bwd_live};
    if (bwd_reads + bwd_writes > 0)
      op.bwd = {kernel(kind, {n}, dt_, kBackwardFactor * f,
                       (bwd_reads + bwd_writes) * e_ * n + extra_bwd_bytes)};
    push(std::move(op));
  }

  void push(Op op) {
    op.section = section_;
    ops_.push_back(std::move(op));
  }

  void save(const std::string& name, int64_t bytes, bool stats = false) {
    saved_.push_back({name, bytes, stats});
  }

  Kernel gemm_kernel(int64_t m, int64_t n, int64_t k) const {
    return kernel(kk::kGemm, {m, n, k}, dt_, 2.0 * m * n * k,
                  static_cast<double>(e_) * (m * k + k * n + m * n));
  }

  // The block of everything built so far; CKPT keeps only its input (checkpoint_bytes = input_bytes).
  Block finish(std::string name, BlockKind kind, int64_t input_bytes, int64_t output_bytes) {
    Block b;
    b.name = std::move(name);
    b.kind = kind;
    b.input_bytes = b.checkpoint_bytes = input_bytes;
    b.output_bytes = output_bytes;
    for (const auto& op : ops_) {
      if (op.fwd.sig.kind.empty()) continue;  // backward-only work
      b.forward.push_back(op.fwd);
      b.forward_tags.push_back({op.section, false});
      b.forward_transient_bytes = std::max(b.forward_transient_bytes, op.fwd_live);
    }
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      for (size_t i = 0; i < it->bwd.size(); ++i) {
        b.backward.push_back(it->bwd[i]);
        b.backward_tags.push_back({it->section, it->linear && i == 1});
      }
      b.backward_transient_bytes = std::max(b.backward_transient_bytes, it->bwd_live);
    }
    b.recompute = b.forward;
    b.saved = saved_;
    for (const auto& s : saved_) {
      b.saved_bytes += s.bytes;
      if (!s.row_stats) b.saved_tensor_bytes += s.bytes;
    }
    return b;
  }

  const ModelSpec& m_;
  const WorkloadOptions& o_;
  std::string dt_;
  int64_t e_, t_, ts_, h_;
  Section section_ = Section::kShard;
  std::vector<Op> ops_;
  std::vector<SavedTensor> saved_;
};

// A norm over t rows of h: saves its input and fp32 per-row statistics (LayerNorm mean + rstd,
// RMSNorm rstd). Forward reads x and writes y; backward reads x and dy, writes dx (both live).
// Its output, the input of the projection(s) after it, is saved once as `output`.
void norm(BlockBuilder& bb, const std::string& name, const std::string& output) {
  const bool ln = bb.m_.norm == "layernorm";
  const int64_t n = bb.ts_ * bb.h_;
  const int64_t stats = (ln ? 2 : 1) * 4 * bb.ts_;
  bb.pointwise(bb.m_.norm, n, ln ? kLayerNormFlops : kRmsNormFlops, 1, 1, 2, 1, 0, 2 * bb.e_ * n,
               static_cast<double>(stats), static_cast<double>(stats));
  bb.save(name + ".input", bb.e_ * n);
  bb.save(name + ".stats", stats, true);
  bb.save(output, bb.e_ * n);
}

// Dropout over n elements: saves a 1-byte mask (PyTorch's bool mask; Korthikanti counts 1 byte).
void dropout(BlockBuilder& bb, const std::string& name, int64_t n, int64_t fwd_live,
             int64_t bwd_live) {
  bb.pointwise(kk::kDropout, n, kDropoutFlops, 1, 1, 1, 1, fwd_live, bwd_live, static_cast<double>(n),
               static_cast<double>(n));
  bb.save(name + ".mask", n);
}

// The end of a residual branch (attention or MLP), on the sequence-parallel shard: the bias
// gradient of its row-parallel output projection (its bias is added after the TP reduction, in
// bias_dropout_add), then dropout `name` and the residual add x + branch.
// - fused (dropout with fused_bias_dropout_add): Megatron's bias_dropout_add_fused_train, one
//   jit-fused kernel: reads the branch and the residual, writes the sum and the 1-byte mask;
//   backward reads dy and the mask, writes the branch gradient (the skip gradient is dy itself).
//   Saves the mask.
// - else the dropout (when on), then the add, which saves nothing. Backward: the skip gradient is
//   accumulated into the branch's input gradient (one add: read 2, write 1).
void branch_end(BlockBuilder& bb, const std::string& name) {
  const int64_t n = bb.ts_ * bb.h_, e = bb.e_;
  bb.section(Section::kShard);
  bb.bias_grad(bb.ts_, bb.h_);
  if (bb.o_.dropout && bb.o_.fused_bias_dropout_add) {
    bb.pointwise(kk::kDropout, n, kDropoutFlops + kAddFlops, 2, 1, 1, 1, e * n, 2 * e * n, static_cast<double>(n),
                 static_cast<double>(n));
    bb.save(name + ".mask", n);
    return;
  }
  if (bb.o_.dropout) dropout(bb, name, n, 2 * e * n, 2 * e * n);
  bb.pointwise(kk::kElementwise, n, kAddFlops, 2, 1, 2, 1, e * n, 2 * e * n);
}

Block embedding_block(const ModelSpec& m, const WorkloadOptions& o) {
  BlockBuilder bb(m, o);
  const int64_t t = bb.t_, h = m.hidden, e = bb.e_, s = o.seq / o.cp, n = t * h, n_s = bb.ts_ * h;
  // Token lookup: read t rows of the table, write t x h; backward scatter-adds dy into the
  // table's gradient rows (read dy, read + write the rows; one add per element). With TP the
  // table is split by vocabulary rows: each rank writes its rows' part of all t tokens, and the
  // partial sums are reduce-scattered onto the sequence-parallel shard.
  bb.section(Section::kEmbedding);
  bb.push({kernel(kk::kEmbedding, {n}, bb.dt_, 0, 2.0 * e * n + 8.0 * t),
           {kernel(kk::kEmbedding, {n}, bb.dt_, static_cast<double>(n), 3.0 * e * n + 8.0 * t)}, e * n, e * n});
  bb.save("input_ids", 8 * t);  // int64 token ids, needed by the lookup's backward
  if (m.position_rows() > 0) {
    // Learned positions: s rows broadcast over the batch, then added to the token embedding.
    bb.push({kernel(kk::kEmbedding, {s * h}, bb.dt_, 0, 2.0 * e * s * h),
             {kernel(kk::kEmbedding, {s * h}, bb.dt_, static_cast<double>(n), e * (n + 2.0 * s * h))},
             e * s * h, e * n});
    bb.pointwise(kk::kElementwise, n, kAddFlops, 2, 1, 0, 0, e * (n + s * h), 0);
  }
  bb.section(Section::kShard);
  if (o.dropout) dropout(bb, "embed.dropout", n_s, 2 * e * n_s, 2 * e * n_s);
  return bb.finish("embedding", BlockKind::kEmbedding, 8 * t, e * n_s);
}

Block decoder_block(const ModelSpec& m, const WorkloadOptions& o, int64_t layer) {
  BlockBuilder bb(m, o);
  const int64_t t = bb.t_, h = m.hidden, e = bb.e_, b = o.batch, s = o.seq / o.cp;
  const int64_t d = m.head_dim(), hq = h / o.tp, kv = m.kv_dim() / o.tp, f = m.ffn_hidden / o.tp;
  const int64_t n = t * h, n_s = bb.ts_ * h, nq = t * hq;
  const int64_t ba = b * (m.heads / o.tp), scores = ba * s * s;  // scores: b*a*s*s elements
  const bool flash = o.flash_attention, drop = o.dropout;

  // --- attention ---
  norm(bb, "norm_1", "attn.qkv.input");
  const bool rope = m.max_positions == 0;  // LLaMA family: rotary embeddings on q and k
  bb.section(Section::kColumn);
  if (m.family == "gpt2" || o.fused_projections) {
    // HF GPT-2 c_attn, Megatron's linear_qkv: one fused projection to [q|k|v].
    bb.gemm(t, hq + 2 * kv, h, 0, e * (n + t * (hq + 2 * kv)));
    if (o.bias_passes && m.bias) {  // matmul, then output.add_(bias): read and write the output
      const int64_t nqkv = t * (hq + 2 * kv);
      bb.pointwise(kk::kElementwise, nqkv, kAddFlops, 1, 1, 0, 0, 0, 0);
      bb.bias_grad(t, hq + 2 * kv);
    }
  } else {
    // Separate q, k, v projections: backward adds their three input gradients (two adds).
    bb.push({Kernel{}, {kernel(kk::kElementwise, {n}, bb.dt_, kAddFlops * n, 3.0 * e * n),
                        kernel(kk::kElementwise, {n}, bb.dt_, kAddFlops * n, 3.0 * e * n)}, 0, 0});
    bb.gemm(t, hq, h, rope ? e * nq : 0, e * (n + nq));
    bb.gemm(t, kv, h, rope ? e * (nq + t * kv) : 0, e * (n + t * kv));
    bb.gemm(t, kv, h, 0, e * (n + t * kv));
  }
  if (rope) {
    // q and k rotated out of place; the rotated ones are saved, the projections' outputs freed.
    // Kind "rope", shape {b * heads, s, d}: a profile times the rotate-half form on the heads'
    // strided view as eager code runs it (5 kernels); the curves price the bytes of a fused kernel.
    const int64_t kvh = m.kv_heads / o.tp;
    for (const auto& [heads, n_elems] : {std::pair{ba, nq}, std::pair{b * kvh, t * kv}}) {
      const double f = kRopeFlops * static_cast<double>(n_elems);
      bb.push({kernel(kk::kRope, {heads, s, d}, bb.dt_, f, 2.0 * e * n_elems),
               {kernel(kk::kRope, {heads, s, d}, bb.dt_, kBackwardFactor * f, 2.0 * e * n_elems)},
               e * n_elems, 2 * e * n_elems});
    }
  }
  bb.section(Section::kAttention);
  if (flash) {
    // FlashAttention (Dao 2022/2023) {b*a, s, s, d}: QK^T and PV, 2*s*s*d flops each per head.
    // Reads q, k, v, writes o and the fp32 logsumexp; backward reads q, k, v, o, do, lse and
    // writes dq, dk, dv. With dropout only the RNG state is kept (the mask is regenerated).
    // Context parallelism: cp ring steps, each this rank's s/cp queries against one s/cp block
    // of keys and values (causal masking is not discounted, as everywhere here).
    const double fl = 4.0 * ba * s * s * d;
    const double lse = 4.0 * ba * s;
    Op op{kernel(kk::kFlashAttention, {ba, s, s, d}, bb.dt_, fl, e * (2.0 * nq + 2.0 * t * kv) + lse),
          {kernel(kk::kFlashAttention, {ba, s, s, d}, bb.dt_, kBackwardFactor * fl,
                  e * (6.0 * nq + 4.0 * t * kv) + lse)},
          0, e * (2 * nq + 2 * t * kv)};
    op.fwd.count = o.cp;
    op.bwd[0].count = o.cp;
    bb.push(std::move(op));
    bb.save("attn.q", e * nq);
    bb.save("attn.k", e * t * kv);
    bb.save("attn.v", e * t * kv);
    bb.save("attn.out", e * nq);  // flash's output = the output projection's input (one tensor)
    bb.save("attn.logsumexp", 4 * ba * s, true);
  } else {
    if (kv < hq) {
      // Eager GQA (HF repeat_kv): k and v expanded to a heads (copies); the copies are saved.
      bb.pointwise(kk::kElementwise, nq, 0, 0, 1, 1, 0, 0, e * (nq + t * kv), e * t * kv, e * t * kv);
      bb.pointwise(kk::kElementwise, nq, 0, 0, 1, 1, 0, 0, e * (nq + t * kv), e * t * kv, e * t * kv);
    }
    // Unfused attention {b*a, s, s, d}: the two batched matmuls S = QK^T and O = PV, 2*s*s*d
    // flops each per head. Forward reads q, k (v), writes S, reads P, writes O; backward
    // (dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q) is twice the flops.
    const double fl = 4.0 * ba * s * s * d;
    bb.push({kernel(kk::kAttention, {ba, s, s, d}, bb.dt_, fl, e * (4.0 * nq + 2.0 * scores)),
             {kernel(kk::kAttention, {ba, s, s, d}, bb.dt_, kBackwardFactor * fl,
                     e * (8.0 * nq + 4.0 * scores))},
             e * scores, e * (nq + scores)});
    bb.save("attn.q", e * nq);
    bb.save("attn.k", e * nq);
    bb.save("attn.v", e * nq);
    if (o.hf_eager) {
      // HF GPT2Attention._attn: S / sqrt(d) and torch.where(causal_mask, S, min) are passes of
      // their own (each reads and writes S; backward: one pass over dS each).
      bb.pointwise(kk::kElementwise, scores, 1, 1, 1, 1, 1, e * scores, 2 * e * scores);
      bb.pointwise(kk::kElementwise, scores, 1, 1, 1, 1, 1, e * scores, 2 * e * scores);
    }
    // Scaled, masked softmax (fused as in Megatron): S is freed, P is saved.
    bb.pointwise(kk::kSoftmax, scores, kSoftmaxFlops, 1, 1, 2, 1, e * scores, 2 * e * scores);
    bb.save("attn.softmax_out", e * scores);
    if (drop) {
      dropout(bb, "attn.prob_dropout", scores, e * scores, 2 * e * scores);
      bb.save("attn.prob_dropout.out", e * scores);  // PV's input
    }
    bb.save("attn.out", e * nq);  // PV's output = the output projection's input
    // Eager head layout changes: forward merges the heads' output ([b,a,s,d] -> [b,s,h], a copy);
    // backward merges dq, dk, dv for the projections (GPT-2 also concatenates them into d[qkv]),
    // and GQA re-expands k, v (repeat_kv) and sums dk, dv over each group.
    std::vector<Kernel> bwd = {kernel(kk::kElementwise, {nq + 2 * t * kv}, bb.dt_, 0, 2.0 * e * (nq + 2 * t * kv))};
    if (m.family == "gpt2") bwd.push_back(kernel(kk::kElementwise, {nq + 2 * t * kv}, bb.dt_, 0, 2.0 * e * (nq + 2 * t * kv)));
    if (kv < hq) {
      for (double flops : {0.0, 0.0, kAddFlops * nq, kAddFlops * nq})  // repeat k, v; sum dk, dv
        bwd.push_back(kernel(kk::kElementwise, {nq}, bb.dt_, flops, e * (nq + t * kv)));
    }
    bb.push({kernel(kk::kElementwise, {nq}, bb.dt_, 0, 2.0 * e * nq), std::move(bwd), 0, 0});
  }
  bb.section(Section::kRow);
  bb.gemm(t, h, hq, e * n, e * (n + nq));  // output projection
  branch_end(bb, "attn.resid_dropout");

  // --- MLP ---
  norm(bb, "norm_2", "mlp.input");
  bb.section(Section::kColumn);
  if (m.activation == "swiglu") {
    // LLaMA MLP: down(silu(gate(x)) * up(x)). Saved as in unfused PyTorch (HF LLaMA) and in
    // Fujii et al.'s 8*s*b*h_ffn: gate, silu(gate), up, and the product (down's input).
    if (o.fused_projections) {
      bb.gemm(t, 2 * f, h, 0, e * (2 * t * f + n));  // Megatron's linear_fc1 = [gate | up]
    } else {
      // Backward adds the gate's and the up projection's input gradients.
      bb.push({Kernel{}, {kernel(kk::kElementwise, {n}, bb.dt_, kAddFlops * n, 3.0 * e * n)}, 0, 0});
      bb.gemm(t, f, h, 0, e * (t * f + n));
      bb.gemm(t, f, h, e * t * f, e * (t * f + n));
    }
    bb.pointwise(kk::kSwiglu, t * f, kSwigluFlops, 2, 1, 3, 2, 0, 3 * e * t * f);
    bb.save("mlp.gate_out", e * t * f);
    bb.save("mlp.silu_out", e * t * f);
    bb.save("mlp.up_out", e * t * f);
    bb.save("mlp.act_out", e * t * f);
  } else if (m.activation == "gelu" && o.hf_eager) {
    // HF gelu_new, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), as eager PyTorch runs
    // it over t*f elements: pow, scalar mul, add, scalar mul, tanh, scalar add, 0.5*x, mul (passes
    // of f elements read + written). Autograd keeps x (pow), tanh's output, 0.5*x and 1+tanh (the
    // last mul's operands). Backward, in reverse: the mul (2 kernels), 1+tanh, tanh, the two
    // scalar muls, pow (3 kernels), and the sum of x's three gradients (2 adds).
    bb.gemm(t, f, h, 0, e * (t * f + n));
    const int64_t tf = t * f;
    const double fwd_passes[] = {2, 2, 3, 2, 2, 2, 2, 3};
    for (double passes : fwd_passes) bb.pointwise(kk::kElementwise, tf, 1, passes - 1, 1, 0, 0, 0, 0);
    std::vector<Kernel> bwd;
    for (double passes : {3, 3, 2, 3, 2, 2, 2, 2, 3, 3, 3})
      bwd.push_back(kernel(kk::kElementwise, {tf}, bb.dt_, kBackwardFactor * tf, passes * e * tf));
    bb.push({Kernel{}, std::move(bwd), 0, 3 * e * tf});
    bb.save("mlp.fc1_out", e * tf);
    bb.save("mlp.gelu.tanh_out", e * tf);
    bb.save("mlp.gelu.half_x", e * tf);
    bb.save("mlp.gelu.one_plus_tanh", e * tf);
    bb.save("mlp.act_out", e * tf);
  } else if (m.activation == "gelu") {
    // GPT-2: fc2(gelu(fc1(x))); gelu saves its input, fc2 saves gelu's output.
    bb.gemm(t, f, h, 0, e * (t * f + n));
    bb.bias_grad(t, f);  // Megatron: added in bias_gelu
    bb.pointwise(kk::kGelu, t * f, kGeluFlops, 1, 1, 2, 1, 0, 2 * e * t * f);
    bb.save("mlp.fc1_out", e * t * f);
    bb.save("mlp.act_out", e * t * f);
  } else {
    // OPT: ReLU saves its output, which is also fc2's input: one tensor; fc1's output is freed.
    bb.gemm(t, f, h, 0, e * (t * f + n));
    bb.pointwise(kk::kRelu, t * f, kReluFlops, 1, 1, 2, 1, e * t * f, 2 * e * t * f);
    bb.save("mlp.act_out", e * t * f);
  }
  bb.section(Section::kRow);
  bb.gemm(t, h, f, e * n, e * (n + t * f));  // down / fc2
  branch_end(bb, "mlp.resid_dropout");

  Block blk = bb.finish("layer." + std::to_string(layer), BlockKind::kDecoder, e * n_s, e * n_s);
  blk.layer = layer;
  return blk;
}

Block head_block(const ModelSpec& m, const WorkloadOptions& o) {
  BlockBuilder bb(m, o);
  const int64_t t = bb.t_, h = m.hidden, e = bb.e_, V = (m.vocab + o.tp - 1) / o.tp, n = t * h;
  const int64_t n_s = bb.ts_ * h;
  norm(bb, "final_norm", "lm_head.input");
  // LM head: logits = x W^T, {t, V, h}. Its output (e*t*V) is cast to fp32 for the loss.
  bb.section(Section::kColumn);
  bb.gemm(t, V, h, e * t * V, e * (t * V + n));
  // Cross-entropy in fp32 (HF casts logits.float(); Megatron's loss is fp32): log_softmax saves
  // its fp32 output; the fp16 and fp32 logits are temporaries. Backward reads the log-probs and
  // writes fp32 dlogits, cast back to the compute dtype.
  bb.section(Section::kLoss);
  const double ce = kCrossEntropyFlops * static_cast<double>(t) * V;
  if (o.vocab_parallel_loss) {
    // Megatron's _VocabParallelCrossEntropy (megatron/mpu/cross_entropy.py, forward/backward) on
    // logits.float() (gpt_model.py post_language_model_processing, fp16_lm_cross_entropy off):
    // the cast (read e, write 4 per logit; none in fp32), then in place on the fp32 logits max
    // (read), sub_ (read + write), exp (read + write), sum (read), div_ (read + write); the
    // softmax is saved. Backward: grad_input.mul_ (read + write) and the cast back to the
    // compute dtype (read 4, write e). One flop per logit and pass.
    const int64_t tv = t * V;
    const double dtv = static_cast<double>(tv);
    if (e != 4) bb.push({kernel(kk::kElementwise, {tv}, "fp32", 0, (e + 4.0) * dtv),
                         {kernel(kk::kElementwise, {tv}, "fp32", 0, (4.0 + e) * dtv)}, (e + 4) * tv, (4 + e) * tv});
    const double passes[][2] = {{1, 0}, {1, 1}, {1, 1}, {1, 0}, {1, 1}};  // max, sub_, exp, sum, div_
    for (const auto& rw : passes)
      bb.push({kernel(kk::kElementwise, {tv}, "fp32", dtv, 4.0 * (rw[0] + rw[1]) * dtv + 4.0 * t), {}, 4 * tv, 0});
    bb.push({Kernel{}, {kernel(kk::kElementwise, {tv}, "fp32", dtv, 8.0 * dtv)}, 0, 4 * tv});
    bb.save("loss.softmax", 4 * tv);
  } else {
    bb.push({kernel(kk::kCrossEntropy, {t, V}, "fp32", ce, (e + 4.0 + 4.0) * t * V + 4.0 * t),
             {kernel(kk::kCrossEntropy, {t, V}, "fp32", kBackwardFactor * ce, (4.0 + 4.0 + e) * t * V)},
             (e + 4) * t * V, (4 + e) * t * V});
    bb.save("loss.log_probs", 4 * t * V);
  }
  bb.save("loss.targets", 8 * t);
  return bb.finish("head", BlockKind::kHead, e * n_s, 4);  // output: the scalar loss
}
}  // namespace

const char* section_name(Section s) {
  static constexpr const char* kNames[] = {"shard", "column", "attention", "row", "embedding", "loss"};  // in order
  static_assert(std::size(kNames) == static_cast<size_t>(Section::kLoss) + 1, "a name per Section");
  return kNames[static_cast<size_t>(s)];
}

const char* block_kind_name(BlockKind k) {
  static constexpr const char* kNames[] = {"embedding", "decoder", "head"};  // in BlockKind's order
  static_assert(std::size(kNames) == static_cast<size_t>(BlockKind::kHead) + 1, "a name per BlockKind");
  return kNames[static_cast<size_t>(k)];
}

double total_flops(const std::vector<Kernel>& ks) {
  return std::accumulate(ks.begin(), ks.end(), 0.0,
                         [](double s, const Kernel& k) { return s + k.flops * static_cast<double>(k.count); });
}

double total_bytes(const std::vector<Kernel>& ks) {
  return std::accumulate(ks.begin(), ks.end(), 0.0,
                         [](double s, const Kernel& k) { return s + k.bytes * static_cast<double>(k.count); });
}

double Block::forward_flops() const { return total_flops(forward); }
double Block::backward_flops() const { return total_flops(backward); }

int64_t Workload::parameter_count() const {
  return std::accumulate(blocks.begin(), blocks.end(), int64_t{0},
                         [](int64_t n, const Block& b) { return n + b.param_count; });
}

double Workload::forward_flops() const {
  return std::accumulate(blocks.begin(), blocks.end(), 0.0,
                         [](double s, const Block& b) { return s + b.forward_flops(); });
}

double Workload::backward_flops() const {
  return std::accumulate(blocks.begin(), blocks.end(), 0.0,
                         [](double s, const Block& b) { return s + b.backward_flops(); });
}

double Workload::flops_per_token() const {
  return (forward_flops() + backward_flops()) / static_cast<double>(tokens);
}

int64_t Workload::activation_bytes_per_layer() const { return layer(0).saved_bytes; }

const Block& Workload::layer(int64_t i) const {
  PROTWIN_ASSERT(i >= 0 && i < model.layers, "layer ", i, " out of range");
  return blocks[static_cast<size_t>(i + 1)];
}

Workload build_workload(const ModelSpec& m, const WorkloadOptions& opt) {
  WorkloadOptions o = opt;
  if (o.seq == 0) o.seq = m.default_seq;
  PROTWIN_CHECK(o.batch > 0, "--batch: expected an integer > 0, got ", o.batch);
  PROTWIN_CHECK(o.seq > 0, "--seq: expected an integer > 0, got ", o.seq);
  PROTWIN_CHECK(o.dtype == "fp16" || o.dtype == "bf16" || o.dtype == "fp32",
                "--dtype: expected one of fp16, bf16, fp32, got \"", o.dtype, "\"");
  PROTWIN_CHECK(m.max_positions == 0 || o.seq <= m.max_positions, "--seq: ", o.seq,
                " exceeds the ", m.max_positions, " learned positions of model '", m.name, "'");
  PROTWIN_CHECK(o.tp >= 1, "--tp: expected an integer > 0, got ", o.tp);
  PROTWIN_CHECK(o.cp >= 1, "--cp: expected an integer > 0, got ", o.cp);
  PROTWIN_CHECK(m.heads % o.tp == 0 && m.kv_heads % o.tp == 0 && m.ffn_hidden % o.tp == 0, "--tp ",
                o.tp, ": heads ", m.heads, ", KV heads ", m.kv_heads, " and ffn_hidden ",
                m.ffn_hidden, " of model '", m.name, "' must all be divisible by TP");
  PROTWIN_CHECK(o.seq % o.cp == 0, "--cp ", o.cp, ": sequence ", o.seq, " is not divisible by CP");
  PROTWIN_CHECK(!o.hf_eager || m.family == "gpt2", "--hf-eager: HuggingFace's eager kernels are modelled for the "
                "GPT-2 family only; model '", m.name, "' is family ", m.family);
  PROTWIN_CHECK(o.cp == 1 || o.flash_attention, "--cp ", o.cp,
                ": context parallelism needs FlashAttention (its ring runs flash blocks)");
  PROTWIN_CHECK(!o.sequence_parallel || (o.batch * (o.seq / o.cp)) % o.tp == 0, "--tp ", o.tp, ": the ",
                o.batch * (o.seq / o.cp), " tokens of a micro-batch on one CP rank are not divisible "
                "by TP (sequence parallelism shards them)");

  {
    // One layer's largest tensors in bytes (activations ~34 s b h, eager attention scores 5 a s^2 b,
    // fp32 logits 4 s b V), in double: beyond 2^60 the int64 byte counts would overflow.
    const double s = static_cast<double>(o.seq), b = static_cast<double>(o.batch);
    const double largest = std::max({34.0 * s * b * static_cast<double>(m.hidden),
                                     o.flash_attention ? 0.0 : 5.0 * static_cast<double>(m.heads) * s * s * b,
                                     4.0 * s * b * static_cast<double>(m.vocab),
                                     4.0 * static_cast<double>(m.parameter_count())});
    PROTWIN_CHECK(largest <= std::ldexp(1.0, 60), "--batch ", o.batch, " --seq ", o.seq, ": model '", m.name,
                  "' at this size needs tensors of ", largest, " bytes, beyond what protwin counts (2^60 bytes)");
  }
  Workload w;
  w.model = m;
  w.options = o;
  w.tokens = o.batch * (o.seq / o.cp);
  const auto layout = parameter_layout(m);
  PROTWIN_ASSERT(layout.size() == static_cast<size_t>(m.layers + 2), "unexpected block count");

  w.blocks.push_back(embedding_block(m, o));
  for (int64_t i = 0; i < m.layers; ++i) w.blocks.push_back(decoder_block(m, o, i));
  w.blocks.push_back(head_block(m, o));
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    PROTWIN_ASSERT(w.blocks[i].name == layout[i].block, "block order mismatch at ", i);
    w.blocks[i].params = layout[i].tensors;
    w.blocks[i].param_count = layout[i].count();
  }
  return w;
}

nlohmann::json block_to_json(const Block& b, bool with_kernels) {
  nlohmann::json j = {{"name", b.name},
                      {"kind", block_kind_name(b.kind)},
                      {"params", b.param_count},
                      {"forward_flops", b.forward_flops()},
                      {"backward_flops", b.backward_flops()},
                      {"forward_bytes", total_bytes(b.forward)},
                      {"backward_bytes", total_bytes(b.backward)},
                      {"saved_bytes", b.saved_bytes},
                      {"checkpoint_bytes", b.checkpoint_bytes},
                      {"input_bytes", b.input_bytes},
                      {"output_bytes", b.output_bytes},
                      {"forward_transient_bytes", b.forward_transient_bytes},
                      {"backward_transient_bytes", b.backward_transient_bytes}};
  if (b.layer >= 0) j["layer"] = b.layer;
  if (with_kernels) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& t : b.params) {
      nlohmann::json pj = {{"name", t.name}, {"shape", t.shape}, {"numel", t.numel}};
      if (!t.tied_to.empty()) pj["tied_to"] = t.tied_to;
      params.push_back(pj);
    }
    nlohmann::json saved = nlohmann::json::array();
    for (const auto& s : b.saved)
      saved.push_back({{"name", s.name}, {"bytes", s.bytes}, {"row_stats", s.row_stats}});
    j["param_tensors"] = params;
    j["saved"] = saved;
    j["forward"] = traces::kernel_set_to_json(b.forward);
    j["backward"] = traces::kernel_set_to_json(b.backward);
    j["recompute"] = traces::kernel_set_to_json(b.recompute);
  }
  return j;
}

nlohmann::json workload_to_json(const Workload& w, bool with_kernels) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : w.blocks) blocks.push_back(block_to_json(b, with_kernels));
  nlohmann::json j = {{"name", w.model.name},
          {"model", model_to_json(w.model)},
          {"params", w.parameter_count()},
          {"layers", w.model.layers},
          {"batch", w.options.batch},
          {"seq", w.options.seq},
          {"dtype", w.options.dtype},
          {"flash_attention", w.options.flash_attention},
          {"dropout", w.options.dropout},
          {"hf_eager", w.options.hf_eager},
          {"tokens", w.tokens},
          {"flops_per_token", w.flops_per_token()},
          {"forward_flops", w.forward_flops()},
          {"backward_flops", w.backward_flops()},
          {"activation_bytes_per_layer", w.activation_bytes_per_layer()},
          {"checkpoint_bytes_per_layer", w.layer(0).checkpoint_bytes},
          {"blocks", blocks}};
  // Sharded workloads say so; the unsharded JSON stays as it always was.
  if (w.options.tp != 1 || w.options.cp != 1) {
    j["tp"] = w.options.tp;
    j["cp"] = w.options.cp;
  }
  return j;
}

}  // namespace protwin::sim
