// Explicit per-block forward/backward with ATen ops (see transformer.h). Shapes in comments.
#include "runtime/model/transformer.h"

#include <cmath>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "runtime/model/rope.h"
#include "traces/error.h"

namespace protwin::rt {
namespace {

// ---- linear layer: y = x W^T + b, x [..., in], W [out, in] ----
at::Tensor linear_fwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
}

// Accumulates dW += dy^T x and db += sum(dy); returns dx = dy W.
at::Tensor linear_bwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy,
                      at::Tensor& dw, at::Tensor* db) {
  const int64_t in = w.size(1), out = w.size(0);
  at::Tensor x2 = x.reshape({-1, in});    // [N, in]
  at::Tensor dy2 = dy.reshape({-1, out});  // [N, out]
  dw.addmm_(dy2.t(), x2);                  // [out, in]
  if (db != nullptr) db->add_(dy2.sum(0));
  std::vector<int64_t> shape = dy.sizes().vec();
  shape.back() = in;
  return at::mm(dy2, w).view(shape);  // [..., in]
}

// ---- RMSNorm: y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps) ----
at::Tensor rms_fwd(const at::Tensor& x, const at::Tensor& w, double eps, at::Tensor* rstd_out) {
  at::Tensor rstd = at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true).add_(eps));  // [B, T, 1]
  if (rstd_out != nullptr) *rstd_out = rstd;
  return x * rstd * w;
}

at::Tensor rms_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                   const at::Tensor& w, at::Tensor& dw) {
  const int64_t c = x.size(-1);
  at::Tensor xhat = x * rstd;                            // [B, T, C]
  dw.add_((dy * xhat).reshape({-1, c}).sum(0));          // [C]
  at::Tensor dxhat = dy * w;                             // [B, T, C]
  at::Tensor proj = (dxhat * xhat).mean(-1, true);       // [B, T, 1]
  return (dxhat - xhat * proj) * rstd;
}

// ---- LayerNorm via ATen's native kernels ----
at::Tensor ln_fwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps,
                  at::Tensor* mean, at::Tensor* rstd) {
  auto r = at::native_layer_norm(x, {x.size(-1)}, w, b, eps);
  if (mean != nullptr) *mean = std::get<1>(r);
  if (rstd != nullptr) *rstd = std::get<2>(r);
  return std::get<0>(r);
}

at::Tensor ln_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                  const at::Tensor& rstd, const at::Tensor& w, const at::Tensor& b, at::Tensor& dw,
                  at::Tensor& db) {
  auto r = at::native_layer_norm_backward(dy, x, {x.size(-1)}, mean, rstd, w, b,
                                          {true, true, true});
  dw.add_(std::get<1>(r));
  db.add_(std::get<2>(r));
  return std::get<0>(r);
}

// ---- RoPE tables (the rotation itself: runtime/model/rope.h) ----
// cos, sin: [T, D] in the dtype of x.
void rope_tables(const ModelSpec& cfg, int64_t t, const at::TensorOptions& opt, at::Tensor& cos,
                 at::Tensor& sin) {
  const int64_t d = cfg.head_dim();
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor inv_freq =
      at::pow(kRopeTheta, at::arange(0, d, 2, f32).div_(static_cast<double>(d))).reciprocal_();
  at::Tensor freqs = at::outer(at::arange(t, f32), inv_freq);  // [T, D/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1);                 // [T, D]
  cos = emb.cos().to(opt);
  sin = emb.sin().to(opt);
}

// [B, KH, T, D] -> [B, NH, T, D]: query head h reads kv head h / (NH / KH).
at::Tensor repeat_kv(const at::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t b = x.size(0), kh = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kh, groups, t, d}).reshape({b, kh * groups, t, d});
}

// Inverse of repeat_kv for gradients: sum over each group.
at::Tensor reduce_kv(const at::Tensor& dx, int64_t groups) {
  if (groups == 1) return dx;
  const int64_t b = dx.size(0), nh = dx.size(1), t = dx.size(2), d = dx.size(3);
  return dx.view({b, nh / groups, groups, t, d}).sum(2);
}

// [B, T, C] -> [B, H, T, D]
at::Tensor split_heads(const at::Tensor& x, int64_t h) {
  return x.view({x.size(0), x.size(1), h, x.size(2) / h}).transpose(1, 2);
}

// [B, H, T, D] -> [B, T, C] (contiguous)
at::Tensor merge_heads(const at::Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

// ---- causal attention written out: softmax(mask(q k^T / sqrt(D))) v ----
// q [B, NH, T, D], k/v [B, KH, T, D] -> y [B, NH, T, D]; att [B, NH, T, T]
at::Tensor attention_fwd(const ModelSpec& cfg, const at::Tensor& q, const at::Tensor& k,
                         const at::Tensor& v, at::Tensor& att) {
  const int64_t groups = cfg.heads / cfg.kv_heads, t = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg.head_dim()));
  at::Tensor scores = at::matmul(q, repeat_kv(k, groups).transpose(-2, -1)).mul_(scale);
  at::Tensor future = at::ones({t, t}, q.options().dtype(at::kBool)).triu_(1);  // j > i
  scores.masked_fill_(future, -std::numeric_limits<double>::infinity());
  att = at::_softmax(scores, -1, /*half_to_float=*/false);
  return at::matmul(att, repeat_kv(v, groups));
}

// dy [B, NH, T, D] -> dq [B, NH, T, D], dk/dv [B, KH, T, D]. Masked entries have att = 0, so
// the softmax backward already gives them zero gradient.
void attention_bwd(const ModelSpec& cfg, const at::Tensor& dy, const at::Tensor& q,
                   const at::Tensor& k, const at::Tensor& v, const at::Tensor& att, at::Tensor& dq,
                   at::Tensor& dk, at::Tensor& dv) {
  const int64_t groups = cfg.heads / cfg.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg.head_dim()));
  at::Tensor kr = repeat_kv(k, groups), vr = repeat_kv(v, groups);
  at::Tensor datt = at::matmul(dy, vr.transpose(-2, -1));                   // [B, NH, T, T]
  dv = reduce_kv(at::matmul(att.transpose(-2, -1), dy), groups);            // [B, KH, T, D]
  at::Tensor ds = at::_softmax_backward_data(datt, att, -1, att.scalar_type()).mul_(scale);
  dq = at::matmul(ds, kr);                                                  // [B, NH, T, D]
  dk = reduce_kv(at::matmul(ds.transpose(-2, -1), q), groups);              // [B, KH, T, D]
}

void check_shape(const at::Tensor& t, const ParamTensor& spec) {
  PROTWIN_CHECK(t.defined(), "runtime weights: tensor for ", spec.name, " is undefined");
  PROTWIN_CHECK(t.sizes().vec() == spec.shape, "runtime weights: ", spec.name, " has shape ",
                t.sizes(), ", expected ", at::IntArrayRef(spec.shape));
}

// Field of the block structs for each parameter name suffix (same order as stored_parameters).
std::vector<at::Tensor*> layer_fields(const ModelSpec& cfg, LayerWeights& w) {
  if (is_gpt2(cfg))
    return {&w.ln1_w, &w.ln1_b, &w.qkv_w, &w.qkv_b, &w.proj_w,   &w.proj_b,
            &w.ln2_w, &w.ln2_b, &w.fc_w,  &w.fc_b,  &w.fcproj_w, &w.fcproj_b};
  return {&w.attn_norm_w, &w.wq, &w.wk, &w.wv, &w.wo, &w.mlp_norm_w, &w.w_gate, &w.w_up, &w.w_down};
}

std::vector<at::Tensor*> model_fields(const ModelSpec& cfg, ModelWeights& w) {
  std::vector<at::Tensor*> f{&w.embedding.wte};
  if (is_gpt2(cfg)) f.push_back(&w.embedding.wpe);
  for (LayerWeights& l : w.layers)
    for (at::Tensor* t : layer_fields(cfg, l)) f.push_back(t);
  f.push_back(&w.head.norm_w);
  if (is_gpt2(cfg)) {
    f.push_back(&w.head.norm_b);
  } else {
    f.push_back(&w.head.lm_head);
  }
  return f;
}

}  // namespace

ModelWeights bind_weights(const ModelSpec& cfg, const std::vector<at::Tensor>& flat) {
  const std::vector<ParamTensor> specs = stored_parameters(cfg);
  PROTWIN_CHECK(flat.size() == specs.size(), "runtime weights: got ", flat.size(),
                " tensors, the ", cfg.family, " model has ", specs.size());
  ModelWeights w;
  w.layers.resize(static_cast<size_t>(cfg.layers));
  std::vector<at::Tensor*> fields = model_fields(cfg, w);
  PROTWIN_ASSERT(fields.size() == specs.size(), "field table out of sync with stored_parameters");
  for (size_t i = 0; i < specs.size(); ++i) {
    check_shape(flat[i], specs[i]);
    *fields[i] = flat[i];
  }
  if (cfg.tied_embeddings) w.head.lm_head = w.embedding.wte;
  return w;
}

void bind_block(const ModelSpec& cfg, int64_t block, const std::vector<at::Tensor>& flat,
                ModelWeights& w) {
  const std::vector<ParamTensor> specs = stored_parameters(cfg);
  PROTWIN_CHECK(flat.size() == specs.size(), "runtime weights: got ", flat.size(),
                " tensors, the ", cfg.family, " model has ", specs.size());
  w.layers.resize(static_cast<size_t>(cfg.layers));
  std::vector<at::Tensor*> fields = model_fields(cfg, w);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].block != block) continue;
    check_shape(flat[i], specs[i]);
    *fields[i] = flat[i];
  }
  if (cfg.tied_embeddings && block == head_block(cfg)) {
    check_shape(flat[0], specs[0]);
    w.head.lm_head = flat[0];
  }
}

std::vector<at::Tensor> flatten_weights(const ModelSpec& cfg, const ModelWeights& w) {
  ModelWeights copy = w;  // handles only
  std::vector<at::Tensor> out;
  for (at::Tensor* t : model_fields(cfg, copy)) out.push_back(*t);
  return out;
}

std::vector<at::Tensor> allocate_params(const ModelSpec& cfg, const at::TensorOptions& options) {
  std::vector<at::Tensor> out;
  for (const ParamTensor& s : stored_parameters(cfg)) out.push_back(at::zeros(s.shape, options));
  return out;
}

void init_params(const ModelSpec& cfg, const std::vector<at::Tensor>& flat, uint64_t seed) {
  at::NoGradGuard no_grad;
  const std::vector<ParamTensor> specs = stored_parameters(cfg);
  PROTWIN_CHECK(flat.size() == specs.size(), "runtime weights: got ", flat.size(),
                " tensors, expected ", specs.size());
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string& n = specs[i].name;
    const bool is_bias = n.size() >= 5 && n.compare(n.size() - 5, 5, ".bias") == 0;
    const bool is_norm = n.find("norm") != std::string::npos;
    if (is_bias) {
      flat[i].zero_();
    } else if (is_norm) {
      flat[i].fill_(1.0);
    } else {
      // Draw on the CPU and copy, so the same seed gives the same weights on any device.
      at::Tensor cpu = at::empty(specs[i].shape, at::TensorOptions().dtype(at::kFloat));
      cpu.normal_(0.0, 0.02, gen);
      flat[i].copy_(cpu);
    }
  }
}

std::vector<at::Tensor*> LayerActs::tensors() {
  std::vector<at::Tensor*> all{&input, &norm1, &norm1_mean, &norm1_rstd, &q,  &k,  &v,
                               &att,   &atty,  &resid,      &norm2,      &norm2_mean,
                               &norm2_rstd,    &fc,         &up,         &act};
  std::vector<at::Tensor*> out;
  for (at::Tensor* t : all)
    if (t->defined()) out.push_back(t);
  return out;
}

int64_t LayerActs::bytes() {
  int64_t n = 0;
  for (at::Tensor* t : tensors()) n += static_cast<int64_t>(t->nbytes());
  return n;
}

// ---------------------------------------------------------------------------------------------
// embedding: x = wte[tokens] (+ wpe[0:T] for GPT-2)
at::Tensor embedding_forward(const ModelSpec& cfg, const EmbeddingWeights& w,
                             const at::Tensor& tokens, EmbeddingActs* saved) {
  at::NoGradGuard no_grad;
  PROTWIN_CHECK(tokens.dim() == 2 && tokens.scalar_type() == at::kLong,
                "runtime embedding: tokens must be a [B, T] int64 tensor");
  const int64_t t = tokens.size(1);
  PROTWIN_CHECK(t <= cfg.max_positions || !is_gpt2(cfg),
                "runtime embedding: sequence ", t, " exceeds the ", cfg.max_positions, " learned positions");
  at::Tensor x = at::embedding(w.wte, tokens);  // [B, T, C]
  if (is_gpt2(cfg)) x.add_(w.wpe.narrow(0, 0, t));  // + [T, C]
  if (saved != nullptr) saved->tokens = tokens;
  return x;
}

void embedding_backward(const ModelSpec& cfg, const EmbeddingActs& saved, const at::Tensor& dx,
                        EmbeddingWeights& grads) {
  at::NoGradGuard no_grad;
  const int64_t c = cfg.hidden, t = saved.tokens.size(1);
  at::Tensor dx2 = dx.reshape({-1, c});                        // [B*T, C]
  grads.wte.index_add_(0, saved.tokens.reshape({-1}), dx2);    // scatter rows into [V, C]
  if (is_gpt2(cfg)) grads.wpe.narrow(0, 0, t).add_(dx.sum(0));  // [T, C]
}

// ---------------------------------------------------------------------------------------------
// decoder layer
at::Tensor layer_forward(const ModelSpec& cfg, const LayerWeights& w, const at::Tensor& x_in,
                         LayerActs* saved) {
  at::NoGradGuard no_grad;
  const at::Tensor x = x_in;  // own a handle: x_in may be saved->input, which is reset below
  LayerActs local;
  LayerActs& a = saved != nullptr ? *saved : local;
  a = LayerActs{};
  a.input = x;  // [B, T, C]
  const int64_t c = cfg.hidden;
  at::Tensor y;
  if (is_gpt2(cfg)) {
    a.norm1 = ln_fwd(x, w.ln1_w, w.ln1_b, kNormEps, &a.norm1_mean, &a.norm1_rstd);
    at::Tensor qkv = linear_fwd(a.norm1, w.qkv_w, w.qkv_b);  // [B, T, 3C]
    a.q = split_heads(qkv.narrow(-1, 0, c), cfg.heads);        // [B, NH, T, D] views of qkv
    a.k = split_heads(qkv.narrow(-1, c, c), cfg.heads);
    a.v = split_heads(qkv.narrow(-1, 2 * c, c), cfg.heads);
    a.atty = merge_heads(attention_fwd(cfg, a.q, a.k, a.v, a.att));  // [B, T, C]
    a.resid = x + linear_fwd(a.atty, w.proj_w, w.proj_b);
    a.norm2 = ln_fwd(a.resid, w.ln2_w, w.ln2_b, kNormEps, &a.norm2_mean, &a.norm2_rstd);
    a.fc = linear_fwd(a.norm2, w.fc_w, w.fc_b);                 // [B, T, F]
    a.act = at::gelu(a.fc, "tanh");                             // [B, T, F]
    y = a.resid + linear_fwd(a.act, w.fcproj_w, w.fcproj_b);    // [B, T, C]
  } else {
    a.norm1 = rms_fwd(x, w.attn_norm_w, kNormEps, &a.norm1_rstd);
    at::Tensor cos, sin;
    rope_tables(cfg, x.size(1), x.options(), cos, sin);          // [T, D]
    a.q = rope_forward(split_heads(linear_fwd(a.norm1, w.wq, {}), cfg.heads), cos, sin);
    a.k = rope_forward(split_heads(linear_fwd(a.norm1, w.wk, {}), cfg.kv_heads), cos, sin);
    a.v = split_heads(linear_fwd(a.norm1, w.wv, {}), cfg.kv_heads);  // [B, KH, T, D]
    a.atty = merge_heads(attention_fwd(cfg, a.q, a.k, a.v, a.att));
    a.resid = x + linear_fwd(a.atty, w.wo, {});
    a.norm2 = rms_fwd(a.resid, w.mlp_norm_w, kNormEps, &a.norm2_rstd);
    a.fc = linear_fwd(a.norm2, w.w_gate, {});                    // gate [B, T, F]
    a.up = linear_fwd(a.norm2, w.w_up, {});                      // [B, T, F]
    a.act = at::silu(a.fc).mul_(a.up);
    y = a.resid + linear_fwd(a.act, w.w_down, {});
  }
  return y;
}

at::Tensor layer_backward(const ModelSpec& cfg, const LayerWeights& w, const LayerActs& a,
                          const at::Tensor& dout, LayerWeights& g) {
  at::NoGradGuard no_grad;
  PROTWIN_CHECK(a.act.defined(), "runtime layer backward: activations were not saved "
                                 "(recompute the forward from the block input first)");
  if (is_gpt2(cfg)) {
    // MLP branch: out = resid + fcproj(gelu(fc(ln2(resid))))
    at::Tensor dact = linear_bwd(a.act, w.fcproj_w, dout, g.fcproj_w, &g.fcproj_b);  // [B,T,F]
    at::Tensor dfc = at::gelu_backward(dact, a.fc, "tanh");
    at::Tensor dnorm2 = linear_bwd(a.norm2, w.fc_w, dfc, g.fc_w, &g.fc_b);          // [B,T,C]
    at::Tensor dresid = ln_bwd(dnorm2, a.resid, a.norm2_mean, a.norm2_rstd, w.ln2_w, w.ln2_b,
                               g.ln2_w, g.ln2_b).add_(dout);
    // attention branch: resid = x + proj(attn(qkv(ln1(x))))
    at::Tensor datty = linear_bwd(a.atty, w.proj_w, dresid, g.proj_w, &g.proj_b);  // [B,T,C]
    at::Tensor dq, dk, dv;
    attention_bwd(cfg, split_heads(datty, cfg.heads), a.q, a.k, a.v, a.att, dq, dk, dv);
    at::Tensor dqkv = at::cat({merge_heads(dq), merge_heads(dk), merge_heads(dv)}, -1);  // [B,T,3C]
    at::Tensor dnorm1 = linear_bwd(a.norm1, w.qkv_w, dqkv, g.qkv_w, &g.qkv_b);
    return ln_bwd(dnorm1, a.input, a.norm1_mean, a.norm1_rstd, w.ln1_w, w.ln1_b, g.ln1_w, g.ln1_b)
        .add_(dresid);
  }
  // MLP branch: out = resid + down(silu(gate(n2)) * up(n2)), n2 = rms(resid)
  at::Tensor dact = linear_bwd(a.act, w.w_down, dout, g.w_down, nullptr);  // [B,T,F]
  at::Tensor dup = dact * at::silu(a.fc);
  at::Tensor dgate = at::silu_backward(dact * a.up, a.fc);
  at::Tensor dnorm2 = linear_bwd(a.norm2, w.w_gate, dgate, g.w_gate, nullptr)
                          .add_(linear_bwd(a.norm2, w.w_up, dup, g.w_up, nullptr));
  at::Tensor dresid = rms_bwd(dnorm2, a.resid, a.norm2_rstd, w.mlp_norm_w, g.mlp_norm_w).add_(dout);
  // attention branch
  at::Tensor datty = linear_bwd(a.atty, w.wo, dresid, g.wo, nullptr);
  at::Tensor dq, dk, dv;
  attention_bwd(cfg, split_heads(datty, cfg.heads), a.q, a.k, a.v, a.att, dq, dk, dv);
  at::Tensor cos, sin;
  rope_tables(cfg, a.input.size(1), a.input.options(), cos, sin);
  dq = merge_heads(rope_backward(dq, cos, sin));  // [B, T, C]
  dk = merge_heads(rope_backward(dk, cos, sin));  // [B, T, KH*D]
  dv = merge_heads(dv);
  at::Tensor dnorm1 = linear_bwd(a.norm1, w.wq, dq, g.wq, nullptr);
  dnorm1.add_(linear_bwd(a.norm1, w.wk, dk, g.wk, nullptr));
  dnorm1.add_(linear_bwd(a.norm1, w.wv, dv, g.wv, nullptr));
  return rms_bwd(dnorm1, a.input, a.norm1_rstd, w.attn_norm_w, g.attn_norm_w).add_(dresid);
}

// ---------------------------------------------------------------------------------------------
// head: loss = mean_i -log softmax(norm(x_i) W^T)[target_i]
at::Tensor head_forward(const ModelSpec& cfg, const HeadWeights& w, const at::Tensor& x_in,
                        const at::Tensor& targets_in, HeadActs* saved) {
  at::NoGradGuard no_grad;
  const at::Tensor x = x_in, targets = targets_in;  // may alias *saved, which is reset below
  PROTWIN_CHECK(targets.dim() == 2 && targets.scalar_type() == at::kLong &&
                    targets.size(0) == x.size(0) && targets.size(1) == x.size(1),
                "runtime head: targets must be a [B, T] int64 tensor matching the input");
  HeadActs local;
  HeadActs& a = saved != nullptr ? *saved : local;
  a = HeadActs{};
  a.input = x;
  a.targets = targets;
  if (is_gpt2(cfg)) {
    a.norm = ln_fwd(x, w.norm_w, w.norm_b, kNormEps, &a.norm_mean, &a.norm_rstd);
  } else {
    a.norm = rms_fwd(x, w.norm_w, kNormEps, &a.norm_rstd);
  }
  at::Tensor logits = at::matmul(a.norm, w.lm_head.t());            // [B, T, V]
  at::Tensor logp = at::_log_softmax(logits, -1, false);            // [B, T, V]
  at::Tensor loss = logp.gather(-1, targets.unsqueeze(-1)).mean().neg();
  a.probs = logp.exp_();
  return loss;
}

at::Tensor head_backward(const ModelSpec& cfg, const HeadWeights& w, const HeadActs& a,
                         HeadWeights& g, double dloss) {
  at::NoGradGuard no_grad;
  const int64_t v = cfg.vocab, n = a.targets.numel();
  // d loss / d logits = (softmax - onehot(target)) * dloss / N
  at::Tensor dlogits = a.probs.reshape({-1, v}).clone();  // [N, V]
  dlogits.scatter_add_(1, a.targets.reshape({-1, 1}),
                       at::full({n, 1}, -1.0, dlogits.options()));
  dlogits.mul_(dloss / static_cast<double>(n));
  at::Tensor norm2d = a.norm.reshape({-1, cfg.hidden});    // [N, C]
  g.lm_head.addmm_(dlogits.t(), norm2d);                  // [V, C] (GPT-2: into wte's grad)
  at::Tensor dnorm = at::mm(dlogits, w.lm_head).view(a.input.sizes());  // [B, T, C]
  if (is_gpt2(cfg))
    return ln_bwd(dnorm, a.input, a.norm_mean, a.norm_rstd, w.norm_w, w.norm_b, g.norm_w, g.norm_b);
  return rms_bwd(dnorm, a.input, a.norm_rstd, w.norm_w, g.norm_w);
}

// ---------------------------------------------------------------------------------------------
double model_forward(const ModelSpec& cfg, const ModelWeights& w, const at::Tensor& tokens,
                     const at::Tensor& targets, ModelActs& acts) {
  acts.layers.assign(static_cast<size_t>(cfg.layers), LayerActs{});
  at::Tensor x = embedding_forward(cfg, w.embedding, tokens, &acts.embedding);
  for (int64_t l = 0; l < cfg.layers; ++l)
    x = layer_forward(cfg, w.layers[static_cast<size_t>(l)], x, &acts.layers[static_cast<size_t>(l)]);
  return head_forward(cfg, w.head, x, targets, &acts.head).item<double>();
}

at::Tensor model_backward(const ModelSpec& cfg, const ModelWeights& w, const ModelActs& acts,
                          ModelWeights& grads, double dloss) {
  at::Tensor dx = head_backward(cfg, w.head, acts.head, grads.head, dloss);
  for (int64_t l = cfg.layers - 1; l >= 0; --l) {
    const size_t i = static_cast<size_t>(l);
    dx = layer_backward(cfg, w.layers[i], acts.layers[i], dx, grads.layers[i]);
  }
  embedding_backward(cfg, acts.embedding, dx, grads.embedding);
  return dx;
}

}  // namespace protwin::rt
