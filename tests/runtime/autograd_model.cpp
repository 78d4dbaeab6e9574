#include "autograd_model.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <ATen/ATen.h>

namespace protwin::rt::testing {

at::Tensor autograd_loss(const ModelSpec& cfg, const std::vector<at::Tensor>& params,
                         const at::Tensor& tokens, const at::Tensor& targets,
                         at::Tensor* embedding_out) {
  std::map<std::string, at::Tensor> p;
  const auto specs = stored_parameters(cfg);
  for (size_t i = 0; i < specs.size(); ++i) p[specs[i].name] = params[i];
  const int64_t b = tokens.size(0), t = tokens.size(1), c = cfg.hidden, d = cfg.head_dim();
  const int64_t nh = cfg.heads, kh = cfg.kv_heads;
  const bool gpt2 = is_gpt2(cfg);
  auto rms = [&](const at::Tensor& x, const at::Tensor& w) {
    return x * at::rsqrt(x.pow(2).mean(-1, true) + kNormEps) * w;
  };
  auto rot = [](const at::Tensor& x) {
    auto halves = x.chunk(2, -1);
    return at::cat({-halves[1], halves[0]}, -1);
  };
  at::Tensor inv_freq = 1.0 / at::pow(kRopeTheta, at::arange(0, d, 2).to(at::kFloat) / d);
  at::Tensor ang = at::arange(t).to(at::kFloat).unsqueeze(1) * inv_freq.unsqueeze(0);
  at::Tensor cos = at::cat({ang, ang}, -1).cos(), sin = at::cat({ang, ang}, -1).sin();
  at::Tensor mask = at::ones({t, t}, at::kBool).triu(1);

  at::Tensor x = at::embedding(p["embed.tokens.weight"], tokens);
  if (gpt2) x = x + p["embed.positions.weight"].narrow(0, 0, t);
  if (embedding_out != nullptr) {
    x.retain_grad();
    *embedding_out = x;
  }
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string pre = "layers." + std::to_string(l) + ".";
    auto P = [&](const char* n) { return p[pre + n]; };
    at::Tensor q, k, v;
    if (gpt2) {
      at::Tensor h = at::layer_norm(x, {c}, P("norm_1.weight"), P("norm_1.bias"), kNormEps);
      auto qkv = at::linear(h, P("attn.qkv.weight"), P("attn.qkv.bias")).split(c, -1);
      q = qkv[0].view({b, t, nh, d}).transpose(1, 2);
      k = qkv[1].view({b, t, nh, d}).transpose(1, 2);
      v = qkv[2].view({b, t, nh, d}).transpose(1, 2);
    } else {
      at::Tensor h = rms(x, P("norm_1.weight"));
      q = at::linear(h, P("attn.q.weight")).view({b, t, nh, d}).transpose(1, 2);
      k = at::linear(h, P("attn.k.weight")).view({b, t, kh, d}).transpose(1, 2);
      v = at::linear(h, P("attn.v.weight")).view({b, t, kh, d}).transpose(1, 2);
      q = q * cos + rot(q) * sin;
      k = k * cos + rot(k) * sin;
      k = k.repeat_interleave(nh / kh, 1);
      v = v.repeat_interleave(nh / kh, 1);
    }
    at::Tensor att = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
    att = at::softmax(att.masked_fill(mask, -std::numeric_limits<double>::infinity()), -1);
    at::Tensor y = at::matmul(att, v).transpose(1, 2).contiguous().view({b, t, c});
    if (gpt2) {
      x = x + at::linear(y, P("attn.out.weight"), P("attn.out.bias"));
      at::Tensor h = at::layer_norm(x, {c}, P("norm_2.weight"), P("norm_2.bias"), kNormEps);
      h = at::gelu(at::linear(h, P("mlp.fc1.weight"), P("mlp.fc1.bias")), "tanh");
      x = x + at::linear(h, P("mlp.fc2.weight"), P("mlp.fc2.bias"));
    } else {
      x = x + at::linear(y, P("attn.out.weight"));
      at::Tensor h = rms(x, P("norm_2.weight"));
      h = at::silu(at::linear(h, P("mlp.gate.weight"))) * at::linear(h, P("mlp.up.weight"));
      x = x + at::linear(h, P("mlp.down.weight"));
    }
  }
  at::Tensor logits;
  if (gpt2) {
    x = at::layer_norm(x, {c}, p["final_norm.weight"], p["final_norm.bias"], kNormEps);
    logits = at::linear(x, p["embed.tokens.weight"]);
  } else {
    logits = at::linear(rms(x, p["final_norm.weight"]), p["lm_head.weight"]);
  }
  return at::cross_entropy_loss(logits.view({-1, cfg.vocab}), targets.reshape({-1}));
}

}  // namespace protwin::rt::testing
