// Each program follows one function of runtime/model/transformer.cpp line by line; the comments
// name the ATen call that makes each tensor. Sizes: fp32 (4 bytes), masks 1 byte.
#include "sim/workload/runtime_tensors.h"

#include <algorithm>

#include "traces/block_allocator.h"
#include "traces/error.h"

namespace protwin::sim {

int TensorProgram::alloc(int64_t bytes) {
  PROTWIN_ASSERT(bytes > 0, "runtime tensors: allocation of ", bytes, " bytes");
  int id = 0;
  for (const TensorEvent& e : events) id = std::max(id, e.tensor + 1);
  events.push_back({id, bytes});
  return id;
}

void TensorProgram::free(int tensor) { events.push_back({tensor, 0}); }

namespace {
int64_t rounded(int64_t bytes) {
  return static_cast<int64_t>(traces::BlockAllocator::round_size(static_cast<size_t>(bytes)));
}
// Live rounded bytes after each event.
std::vector<int64_t> live_curve(const TensorProgram& p) {
  std::vector<int64_t> size_of, out;
  int64_t live = 0;
  for (const TensorEvent& e : p.events) {
    if (static_cast<size_t>(e.tensor) >= size_of.size()) size_of.resize(static_cast<size_t>(e.tensor) + 1, 0);
    if (e.bytes > 0) {
      size_of[static_cast<size_t>(e.tensor)] = rounded(e.bytes);
      live += size_of[static_cast<size_t>(e.tensor)];
    } else {
      live -= size_of[static_cast<size_t>(e.tensor)];
    }
    out.push_back(live);
  }
  return out;
}
}  // namespace

int64_t TensorProgram::peak_bytes() const {
  const std::vector<int64_t> c = live_curve(*this);
  return c.empty() ? 0 : *std::max_element(c.begin(), c.end());
}

int64_t TensorProgram::kept_bytes() const {
  const std::vector<int64_t> c = live_curve(*this);
  return c.empty() ? 0 : c.back();
}

namespace {

struct Dims {
  int64_t b, t, c, f, v, nh, kh, d;
  bool llama;
  int64_t btc() const { return 4 * b * t * c; }
  int64_t btk() const { return 4 * b * t * kh * d; }  // k or v of grouped-query attention
  int64_t btf() const { return 4 * b * t * f; }
  int64_t btv() const { return 4 * b * t * v; }
  int64_t att() const { return 4 * b * nh * t * t; }
  int64_t rows() const { return 4 * b * t; }  // [B, T, 1] fp32 statistics
  int64_t groups() const { return nh / kh; }
};

Dims dims(const RuntimeShapes& s) {
  const ModelSpec& m = s.model;
  PROTWIN_CHECK(m.family == "gpt2" || m.family == "llama", "runtime tensors: the runtime implements gpt2 and llama, got \"",
                m.family, "\"");
  PROTWIN_CHECK(s.batch >= 1 && s.seq >= 1, "runtime tensors: batch and seq must be positive");
  return Dims{s.batch, s.seq, m.hidden, m.ffn_hidden, m.vocab, m.heads, m.kv_heads, m.head_dim(), m.family == "llama"};
}

// A norm's forward; its output y and statistics are kept (appended to p.kept). GPT-2:
// native_layer_norm returns (y, mean, rstd). LLaMA: x * rstd * w with rstd = rsqrt(mean(x^2) +
// eps): pow, mean, rsqrt (mean and pow die), x*rstd, *w (x*rstd dies).
void norm_forward(TensorProgram& p, const Dims& d) {
  if (!d.llama) {
    const int y = p.alloc(d.btc()), mean = p.alloc(d.rows()), rstd = p.alloc(d.rows());
    p.kept.insert(p.kept.end(), {y, mean, rstd});
    return;
  }
  const int pw = p.alloc(d.btc()), mean = p.alloc(d.rows()), rstd = p.alloc(d.rows());
  p.free(mean);
  p.free(pw);
  const int xr = p.alloc(d.btc()), y = p.alloc(d.btc());
  p.free(xr);
  p.kept.insert(p.kept.end(), {y, rstd});
}

// rms_bwd: xhat, dy*xhat, its [C] sum (added in place), dxhat = dy*w, dxhat*xhat, its row mean,
// xhat*proj, dxhat - that, * rstd; the locals die at return.
int rms_backward(TensorProgram& p, const Dims& d) {
  const int xhat = p.alloc(d.btc()), prod = p.alloc(d.btc()), sum = p.alloc(4 * d.c);
  p.free(sum);
  p.free(prod);
  const int dxhat = p.alloc(d.btc()), prod2 = p.alloc(d.btc()), proj = p.alloc(d.rows());
  p.free(prod2);
  const int a = p.alloc(d.btc()), b = p.alloc(d.btc()), dx = p.alloc(d.btc());
  p.free(b);
  p.free(a);
  p.free(proj);
  p.free(dxhat);
  p.free(xhat);
  return dx;
}

// native_layer_norm_backward: dx, dw, db (dw and db added into the gradients, then dropped).
int ln_backward(TensorProgram& p, const Dims& d) {
  const int dx = p.alloc(d.btc()), dw = p.alloc(4 * d.c), db = p.alloc(4 * d.c);
  p.free(dw);
  p.free(db);
  return dx;
}

// linear_bwd's bias gradient: dy2.sum(0), added in place.
void bias_sum(TensorProgram& p, int64_t features) { p.free(p.alloc(4 * features)); }

// rope_tables: inv_freq, arange(T), outer -> freqs [T, D/2], cat -> emb [T, D], cos, sin.
void rope_tables(TensorProgram& p, const Dims& d, int* cos, int* sin) {
  const int inv = p.alloc(4 * (d.d / 2));
  p.free(p.alloc(4 * (d.d / 2)));  // the arange before its pow
  const int ar = p.alloc(4 * d.t), freqs = p.alloc(4 * d.t * (d.d / 2));
  p.free(ar);
  const int emb = p.alloc(4 * d.t * d.d);
  *cos = p.alloc(4 * d.t * d.d);
  *sin = p.alloc(4 * d.t * d.d);
  p.free(emb);
  p.free(freqs);
  p.free(inv);
}

// rope_forward(x) = x*cos + rotate_half(x)*sin with x the split-head view of a fresh linear output
// `lin` of `bytes`: rotate_half (neg of one half, cat) first, then the products and their sum.
int rope_forward(TensorProgram& p, int lin, int64_t bytes) {
  const int neg = p.alloc(bytes / 2), rot = p.alloc(bytes);
  p.free(neg);
  const int xc = p.alloc(bytes), rs = p.alloc(bytes), y = p.alloc(bytes);
  p.free(rs);
  p.free(xc);
  p.free(rot);
  p.free(lin);
  return y;
}

// merge_heads(rope_backward(g)) = merge(g*cos - rotate_half(g*sin)); the old gradient `g` dies.
int rope_backward_merged(TensorProgram& p, int g, int64_t bytes) {
  const int gs = p.alloc(bytes), neg = p.alloc(bytes / 2), rot = p.alloc(bytes);
  p.free(neg);
  const int gc = p.alloc(bytes), r = p.alloc(bytes);
  p.free(gc);
  p.free(rot);
  p.free(gs);
  const int merged = p.alloc(bytes);
  p.free(r);
  p.free(g);
  return merged;
}

// attention_fwd from its scores on, and the output projection with the residual add: matmul(q,
// k^T) first copies two [B*NH, T, D] operands (GPT-2: the q and k views of qkv; LLaMA: repeat_kv's
// k (GQA) and q, laid out like its transposed input; without GQA matmul copies k^T instead), which
// die with the statement; ones(T,T).triu_ (the mask), _softmax; matmul(att, v) copies v (LLaMA:
// repeat_kv(v), or matmul's copy); merge_heads' transpose + reshape copies the output. Kept: the
// attention probabilities, the merged output and the residual sum.
void attention_forward(TensorProgram& p, const Dims& d) {
  const int c1 = p.alloc(d.btc()), c2 = p.alloc(d.btc()), scores = p.alloc(d.att());
  p.free(c2);
  p.free(c1);
  const int mask = p.alloc(d.t * d.t), att = p.alloc(d.att());
  const int vc = p.alloc(d.btc()), out = p.alloc(d.btc());
  p.free(vc);
  p.free(mask);
  p.free(scores);
  const int atty = p.alloc(d.btc());
  p.free(out);
  const int proj = p.alloc(d.btc()), resid = p.alloc(d.btc());
  p.free(proj);
  p.kept.insert(p.kept.end(), {att, atty, resid});
}

}  // namespace

TensorProgram embedding_forward_tensors(const RuntimeShapes& s) {
  const Dims d = dims(s);
  TensorProgram p;
  p.output = p.alloc(d.btc());  // at::embedding; GPT-2 adds wpe in place
  return p;
}

TensorProgram layer_forward_tensors(const RuntimeShapes& s) {
  const Dims d = dims(s);
  TensorProgram p;
  norm_forward(p, d);
  int cos = 0, sin = 0;
  if (!d.llama) {
    p.kept.push_back(p.alloc(3 * d.btc()));  // addmm; q, k, v are views of it
  } else {
    rope_tables(p, d, &cos, &sin);
    const int q = rope_forward(p, p.alloc(d.btc()), d.btc());
    const int k = rope_forward(p, p.alloc(d.btk()), d.btk());
    const int v = p.alloc(d.btk());
    p.kept.insert(p.kept.end(), {q, k, v});
  }
  attention_forward(p, d);
  norm_forward(p, d);
  if (!d.llama) {
    const int fc = p.alloc(d.btf()), act = p.alloc(d.btf());  // linear, gelu
    p.kept.insert(p.kept.end(), {fc, act});
  } else {
    const int gate = p.alloc(d.btf()), up = p.alloc(d.btf()), act = p.alloc(d.btf());  // silu(gate).mul_(up)
    p.kept.insert(p.kept.end(), {gate, up, act});
  }
  const int down = p.alloc(d.btc());  // fc2 / down projection, then the residual add
  p.output = p.alloc(d.btc());
  p.free(down);
  if (d.llama) {
    p.free(cos);
    p.free(sin);
  }
  return p;
}

TensorProgram head_forward_tensors(const RuntimeShapes& s) {
  const Dims d = dims(s);
  TensorProgram p;
  norm_forward(p, d);
  const int logits = p.alloc(d.btv()), logp = p.alloc(d.btv());  // matmul, _log_softmax
  const int picked = p.alloc(d.rows()), mean_loss = p.alloc(4), loss = p.alloc(4);  // gather, mean, neg
  p.free(mean_loss);
  p.free(picked);
  p.free(logits);
  p.kept.push_back(logp);  // probs = exp_
  p.output = loss;
  return p;
}

TensorProgram head_backward_tensors(const RuntimeShapes& s) {
  const Dims d = dims(s);
  TensorProgram p;
  const int dlogits = p.alloc(d.btv());  // probs.clone()
  p.free(p.alloc(d.rows()));             // at::full({N, 1}, -1) for the scatter_add_
  const int dnorm = p.alloc(d.btc());    // mm(dlogits, lm_head); addmm_ into the gradient in place
  p.output = d.llama ? rms_backward(p, d) : ln_backward(p, d);
  p.free(dnorm);
  p.free(dlogits);
  return p;
}

TensorProgram layer_backward_tensors(const RuntimeShapes& s) {
  const Dims d = dims(s);
  TensorProgram p;
  std::vector<int> locals;  // die at return, last declared first
  if (!d.llama) {
    bias_sum(p, d.c);
    const int dact = p.alloc(d.btf());  // mm(dy, fcproj_w)
    const int dfc = p.alloc(d.btf());   // gelu_backward
    bias_sum(p, d.f);
    const int dnorm2 = p.alloc(d.btc());
    const int dresid = ln_backward(p, d);  // .add_(dout)
    bias_sum(p, d.c);
    const int datty = p.alloc(d.btc());
    // attention_bwd: k, v, q are views of qkv and dy a head split of datty: matmul copies them.
    const int dyc = p.alloc(d.btc()), vc = p.alloc(d.btc()), datt = p.alloc(d.att());
    p.free(dyc);
    p.free(vc);
    const int dyc2 = p.alloc(d.btc()), dv = p.alloc(d.btc());
    p.free(dyc2);
    const int ds = p.alloc(d.att());  // _softmax_backward_data, mul_ in place
    const int kc = p.alloc(d.btc()), dq = p.alloc(d.btc());
    p.free(kc);
    const int qc = p.alloc(d.btc()), dk = p.alloc(d.btc());
    p.free(qc);
    p.free(ds);
    p.free(datt);
    const int mq = p.alloc(d.btc()), mk = p.alloc(d.btc()), mv = p.alloc(d.btc());
    const int dqkv = p.alloc(3 * d.btc());  // cat
    p.free(mq);
    p.free(mk);
    p.free(mv);
    bias_sum(p, 3 * d.c);
    const int dnorm1 = p.alloc(d.btc());
    p.output = ln_backward(p, d);
    locals = {dact, dfc, dnorm2, dresid, datty, dq, dk, dv, dqkv, dnorm1};
  } else {
    const int dact = p.alloc(d.btf());
    const int silu = p.alloc(d.btf()), dup = p.alloc(d.btf());
    p.free(silu);
    const int prod = p.alloc(d.btf()), dgate = p.alloc(d.btf());  // dact * up, silu_backward
    p.free(prod);
    const int dnorm2 = p.alloc(d.btc());
    p.free(p.alloc(d.btc()));  // the up projection's input gradient, added in place
    const int dresid = rms_backward(p, d);
    const int datty = p.alloc(d.btc());
    // attention_bwd: repeat_kv copies k and v (GQA); dy (a head split) is copied by matmul.
    const int kr = p.alloc(d.btc()), vr = p.alloc(d.btc());
    const int dyc = p.alloc(d.btc()), datt = p.alloc(d.att());
    p.free(dyc);
    const int dyc2 = p.alloc(d.btc()), dvr = p.alloc(d.btc());
    p.free(dyc2);
    int dv = dvr;
    if (d.groups() > 1) {  // reduce_kv: sum over each group
      dv = p.alloc(d.btk());
      p.free(dvr);
    }
    const int ds = p.alloc(d.att());
    const int dq = p.alloc(d.btc());
    const int qc = p.alloc(d.btc()), dkr = p.alloc(d.btc());
    p.free(qc);
    int dk = dkr;
    if (d.groups() > 1) {
      dk = p.alloc(d.btk());
      p.free(dkr);
    }
    p.free(ds);
    p.free(datt);
    p.free(vr);
    p.free(kr);
    int cos = 0, sin = 0;
    rope_tables(p, d, &cos, &sin);
    const int dqm = rope_backward_merged(p, dq, d.btc());
    const int dkm = rope_backward_merged(p, dk, d.btk());
    const int dvm = p.alloc(d.btk());  // merge_heads(dv)
    p.free(dv);
    const int dnorm1 = p.alloc(d.btc());
    p.free(p.alloc(d.btc()));  // wk's input gradient, added in place
    p.free(p.alloc(d.btc()));  // wv's
    p.output = rms_backward(p, d);
    locals = {dact, dup, dgate, dnorm2, dresid, datty, cos, sin, dqm, dkm, dvm, dnorm1};
  }
  for (auto it = locals.rbegin(); it != locals.rend(); ++it) p.free(*it);
  return p;
}

TensorProgram embedding_backward_tensors(const RuntimeShapes& s) {
  const Dims d = dims(s);
  TensorProgram p;
  if (!d.llama) p.free(p.alloc(4 * d.t * d.c));  // dx.sum(0) for wpe; index_add_ is in place
  return p;
}

std::vector<int64_t> layer_saved_tensor_bytes(const RuntimeShapes& s) {
  const Dims d = dims(s);
  if (!d.llama)  // input, norm1, mean, rstd, q, k, v, att, atty, resid, norm2, mean, rstd, fc, act
    return {d.btc(), d.btc(), d.rows(), d.rows(), d.btc(), d.btc(), d.btc(), d.att(),
            d.btc(), d.btc(), d.btc(), d.rows(), d.rows(), d.btf(), d.btf()};
  // input, norm1, rstd, q, k, v, att, atty, resid, norm2, rstd, gate, up, act
  return {d.btc(), d.btc(), d.rows(), d.btc(), d.btk(), d.btk(), d.att(),
          d.btc(), d.btc(), d.btc(), d.rows(), d.btf(), d.btf(), d.btf()};
}

int64_t swap_out_pack_bytes(const RuntimeShapes& s) {
  const Dims d = dims(s);
  return d.llama ? 0 : d.btc();
}

}  // namespace protwin::sim
