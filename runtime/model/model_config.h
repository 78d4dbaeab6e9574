// The runtime's transformer description and its parameter layout, torch-free so a chunk store or
// the CLI can plan buffers without including LibTorch.
//
// Parameters are listed in EXECUTION ORDER (order of first use in forward): embedding block,
// then each decoder layer, then the head (final norm + LM head). A tied parameter (GPT-2's token
// embedding, reused by the LM head) keeps its first slot only. Linear weights are [out, in]
// (y = x W^T + b), as torch.nn.Linear and llm.c.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace protwin::rt {

enum class ModelFamily {
  kGpt2,   // LayerNorm with bias, learned positions, GeLU(tanh) MLP, tied LM head, biases
  kLlama,  // RMSNorm, RoPE, SwiGLU MLP, grouped-query attention, untied LM head, no biases
};

struct ModelConfig {
  ModelFamily family = ModelFamily::kGpt2;
  int64_t hidden = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 4;     // GPT-2: must equal heads
  int64_t ffn_hidden = 256;  // GPT-2: 4 * hidden
  int64_t vocab = 97;
  int64_t max_seq = 16;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;  // LLaMA only

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  bool tied_embeddings() const { return family == ModelFamily::kGpt2; }

  // Throws protwin::Error naming the offending field ("model config: heads ...").
  void validate() const;

  // Small configurations both flavours' tests use.
  static ModelConfig tiny_gpt2();
  static ModelConfig tiny_llama();
};

std::string to_string(ModelFamily family);

// Block indices: 0 = embedding, 1..layers = decoder layers, layers + 1 = head.
inline int64_t embedding_block() { return 0; }
inline int64_t layer_block(int64_t layer) { return layer + 1; }
inline int64_t head_block(const ModelConfig& cfg) { return cfg.layers + 1; }

struct ParamSpec {
  std::string name;            // e.g. "layers.3.attn.qkv.weight"
  std::vector<int64_t> shape;  // row-major
  int64_t block = 0;           // see block indices above
  int64_t numel() const;
};

// Every parameter once, in execution order.
std::vector<ParamSpec> param_specs(const ModelConfig& cfg);

int64_t param_count(const ModelConfig& cfg);

}  // namespace protwin::rt
