#include "traces/parameter_layout.h"

#include "traces/error.h"

namespace protwin::traces {

namespace {

// Appends a tensor to the last block of `out`.
void add(std::vector<BlockParams>& out, const std::string& name, std::vector<int64_t> shape,
         const std::string& tied_to = "") {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  out.back().tensors.push_back({name, std::move(shape), n, tied_to, static_cast<int64_t>(out.size()) - 1});
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
  auto block = [&](std::string name) { out.push_back({std::move(name), {}}); };
  auto norm = [&](const std::string& prefix) {
    add(out, prefix + ".weight", {h});
    // RMSNorm has no shift; LayerNorm has one when the model uses biases.
    if (!m.rmsnorm() && m.bias) add(out, prefix + ".bias", {h});
  };
  auto linear = [&](const std::string& prefix, int64_t rows, int64_t cols) {
    add(out, prefix + ".weight", {rows, cols});
    if (m.bias) add(out, prefix + ".bias", {rows});
  };

  block("embedding");
  add(out, "embed.tokens.weight", {m.vocab, h});
  if (m.position_rows() > 0) add(out, "embed.positions.weight", {m.position_rows(), h});

  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "layers." + std::to_string(i);
    block("layer." + std::to_string(i));
    norm(p + ".norm_1");
    if (m.family == "gpt2") {
      linear(p + ".attn.qkv", h + 2 * kv, h);  // HF GPT-2 c_attn: one fused matrix
    } else {
      linear(p + ".attn.q", h, h);
      linear(p + ".attn.k", kv, h);
      linear(p + ".attn.v", kv, h);
    }
    linear(p + ".attn.out", h, h);
    norm(p + ".norm_2");
    if (m.swiglu()) {
      linear(p + ".mlp.gate", f, h);
      linear(p + ".mlp.up", f, h);
      linear(p + ".mlp.down", h, f);
    } else {
      linear(p + ".mlp.fc1", f, h);
      linear(p + ".mlp.fc2", h, f);
    }
  }

  block("head");
  norm("final_norm");
  // The LM head has no bias in GPT-2, OPT or LLaMA.
  add(out, "lm_head.weight", {m.vocab, h}, m.tied_embeddings ? "embed.tokens.weight" : "");
  return out;
}

std::vector<ParamTensor> stored_parameters(const ModelSpec& m) {
  std::vector<ParamTensor> out;
  for (BlockParams& b : parameter_layout(m))
    for (ParamTensor& t : b.tensors)
      if (t.tied_to.empty()) out.push_back(std::move(t));
  return out;
}

int64_t ModelSpec::parameter_count() const {
  int64_t n = 0;
  for (const auto& b : parameter_layout(*this)) n += b.count();
  return n;
}

}  // namespace protwin::traces
