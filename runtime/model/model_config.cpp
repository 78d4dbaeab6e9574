#include "runtime/model/model_config.h"

#include "traces/error.h"

namespace protwin::rt {

void ModelConfig::validate() const {
  PROTWIN_CHECK(hidden > 0 && layers > 0 && heads > 0 && kv_heads > 0 && ffn_hidden > 0 &&
                    vocab > 0 && max_seq > 0,
                "model config: hidden, layers, heads, kv_heads, ffn_hidden, vocab and max_seq "
                "must all be positive");
  PROTWIN_CHECK(hidden % heads == 0, "model config: hidden ", hidden,
                " is not divisible by heads ", heads);
  PROTWIN_CHECK(heads % kv_heads == 0, "model config: heads ", heads,
                " is not divisible by kv_heads ", kv_heads);
  if (family == ModelFamily::kGpt2) {
    PROTWIN_CHECK(kv_heads == heads, "model config: GPT-2 has no grouped-query attention "
                                     "(kv_heads ", kv_heads, " != heads ", heads, ")");
  } else {
    PROTWIN_CHECK(head_dim() % 2 == 0, "model config: RoPE needs an even head dimension, got ",
                  head_dim());
  }
  PROTWIN_CHECK(norm_eps > 0, "model config: norm_eps must be positive");
}

ModelConfig ModelConfig::tiny_gpt2() {
  ModelConfig c;
  c.family = ModelFamily::kGpt2;
  c.hidden = 64;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 4;
  c.ffn_hidden = 256;
  c.vocab = 97;
  c.max_seq = 16;
  return c;
}

ModelConfig ModelConfig::tiny_llama() {
  ModelConfig c;
  c.family = ModelFamily::kLlama;
  c.hidden = 64;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn_hidden = 176;
  c.vocab = 97;
  c.max_seq = 16;
  return c;
}

std::string to_string(ModelFamily family) {
  return family == ModelFamily::kGpt2 ? "gpt2" : "llama";
}

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<ParamSpec> param_specs(const ModelConfig& cfg) {
  cfg.validate();
  const int64_t c = cfg.hidden, f = cfg.ffn_hidden, v = cfg.vocab;
  std::vector<ParamSpec> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, int64_t block) {
    out.push_back(ParamSpec{std::move(name), std::move(shape), block});
  };
  add("embed.tokens.weight", {v, c}, embedding_block());
  if (cfg.family == ModelFamily::kGpt2) add("embed.positions.weight", {cfg.max_seq, c}, embedding_block());
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const int64_t b = layer_block(l);
    if (cfg.family == ModelFamily::kGpt2) {
      add(p + "norm_1.weight", {c}, b);
      add(p + "norm_1.bias", {c}, b);
      add(p + "attn.qkv.weight", {3 * c, c}, b);
      add(p + "attn.qkv.bias", {3 * c}, b);
      add(p + "attn.out.weight", {c, c}, b);
      add(p + "attn.out.bias", {c}, b);
      add(p + "norm_2.weight", {c}, b);
      add(p + "norm_2.bias", {c}, b);
      add(p + "mlp.fc1.weight", {f, c}, b);
      add(p + "mlp.fc1.bias", {f}, b);
      add(p + "mlp.fc2.weight", {c, f}, b);
      add(p + "mlp.fc2.bias", {c}, b);
    } else {
      add(p + "norm_1.weight", {c}, b);
      add(p + "attn.q.weight", {c, c}, b);
      add(p + "attn.k.weight", {cfg.kv_dim(), c}, b);
      add(p + "attn.v.weight", {cfg.kv_dim(), c}, b);
      add(p + "attn.out.weight", {c, c}, b);
      add(p + "norm_2.weight", {c}, b);
      add(p + "mlp.gate.weight", {f, c}, b);
      add(p + "mlp.up.weight", {f, c}, b);
      add(p + "mlp.down.weight", {c, f}, b);
    }
  }
  const int64_t h = head_block(cfg);
  if (cfg.family == ModelFamily::kGpt2) {
    add("final_norm.weight", {c}, h);
    add("final_norm.bias", {c}, h);  // LM head is tied to embed.tokens.weight: no slot of its own
  } else {
    add("final_norm.weight", {c}, h);
    add("lm_head.weight", {v, c}, h);
  }
  return out;
}

int64_t param_count(const ModelConfig& cfg) {
  int64_t n = 0;
  for (const ParamSpec& p : param_specs(cfg)) n += p.numel();
  return n;
}

}  // namespace protwin::rt
