#include "sim/workload/parameters.h"

#include "traces/error.h"

namespace protwin::sim {

namespace {

void add(BlockParams& b, const std::string& name, std::vector<int64_t> shape,
         const std::string& tied_to = "") {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  b.tensors.push_back({name, std::move(shape), n, tied_to});
}

void add_norm(BlockParams& b, const ModelSpec& m, const std::string& prefix) {
  add(b, prefix + ".weight", {m.hidden});
  // RMSNorm has no shift; LayerNorm has one when the model uses biases.
  if (m.norm == "layernorm" && m.bias) add(b, prefix + ".bias", {m.hidden});
}

void add_linear(BlockParams& b, const ModelSpec& m, const std::string& prefix, int64_t out,
                int64_t in) {
  add(b, prefix + ".weight", {out, in});
  if (m.bias) add(b, prefix + ".bias", {out});
}

}  // namespace

int64_t BlockParams::count() const {
  int64_t n = 0;
  for (const auto& t : tensors)
    if (t.tied_to.empty()) n += t.numel;
  return n;
}

std::vector<BlockParams> parameter_layout(const ModelSpec& m) {
  PROTWIN_ASSERT(m.hidden > 0 && m.heads > 0 && m.kv_heads > 0 && m.layers > 0,
                 "parameter_layout on an unvalidated spec '", m.name, "'");
  std::vector<BlockParams> out;
  const int64_t h = m.hidden, kv = m.kv_dim(), f = m.ffn_hidden;

  BlockParams emb{"embedding", {}};
  add(emb, "embed.tokens.weight", {m.vocab, h});
  if (m.position_rows() > 0) add(emb, "embed.positions.weight", {m.position_rows(), h});
  out.push_back(std::move(emb));

  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "layers." + std::to_string(i);
    BlockParams b{"layer." + std::to_string(i), {}};
    add_norm(b, m, p + ".norm_1");
    if (m.family == "gpt2") {
      add_linear(b, m, p + ".attn.qkv", h + 2 * kv, h);  // HF GPT-2 c_attn: one fused matrix
    } else {
      add_linear(b, m, p + ".attn.q", h, h);
      add_linear(b, m, p + ".attn.k", kv, h);
      add_linear(b, m, p + ".attn.v", kv, h);
    }
    add_linear(b, m, p + ".attn.out", h, h);
    add_norm(b, m, p + ".norm_2");
    if (m.activation == "swiglu") {
      add_linear(b, m, p + ".mlp.gate", f, h);
      add_linear(b, m, p + ".mlp.up", f, h);
      add_linear(b, m, p + ".mlp.down", h, f);
    } else {
      add_linear(b, m, p + ".mlp.fc1", f, h);
      add_linear(b, m, p + ".mlp.fc2", h, f);
    }
    out.push_back(std::move(b));
  }

  BlockParams head{"head", {}};
  add_norm(head, m, "final_norm");
  // The LM head has no bias in GPT-2, OPT or LLaMA.
  add(head, "lm_head.weight", {m.vocab, h}, m.tied_embeddings ? "embed.tokens.weight" : "");
  out.push_back(std::move(head));
  return out;
}

int64_t ModelSpec::parameter_count() const {
  int64_t n = 0;
  for (const auto& b : parameter_layout(*this)) n += b.count();
  return n;
}

}  // namespace protwin::sim
