// ModelSpec: a decoder-only transformer's architecture, the one model description of protwin. The
// simulator's workload, the memory estimators and the runtime all read it (a plan carries it as
// meta.model_spec); its parameter layout is traces/parameter_layout.h. It lives in traces/ because
// the runtime may not link the simulator (DESIGN §2). The zoo and name resolution are the
// simulator's (sim/workload/model_spec.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::traces {

struct ModelSpec {
  std::string name;
  std::string family;          // "gpt2" | "opt" | "llama" (llama covers Mistral and Llama 3)
  int64_t hidden = 0;          // h
  int64_t layers = 0;          // L
  int64_t heads = 0;           // a
  int64_t kv_heads = 0;        // k (== heads without GQA)
  int64_t ffn_hidden = 0;      // h_ffn (4h for GPT-2; SwiGLU inner size for LLaMA)
  int64_t vocab = 0;           // V
  int64_t max_positions = 0;   // learned position embeddings (0 with RoPE)
  int64_t position_offset = 0; // extra position rows (HF OPT stores max_positions + 2)
  bool tied_embeddings = true; // LM head shares the token embedding
  bool bias = true;            // linear and norm biases
  std::string norm = "layernorm";   // "layernorm" | "rmsnorm"
  std::string activation = "gelu";  // "gelu" | "relu" | "swiglu"
  int64_t default_seq = 1024;
  std::string source;          // "zoo", a file path, or "inline"
  std::string citation;        // where the numbers come from (the JSON "source" field)

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  int64_t position_rows() const { return max_positions > 0 ? max_positions + position_offset : 0; }
  bool swiglu() const { return activation == "swiglu"; }
  bool rmsnorm() const { return norm == "rmsnorm"; }
  // Exact parameter count (embeddings, every layer, final norm, untied head if any).
  int64_t parameter_count() const;
};

// A family the JSON accepts ("gpt" is "gpt2": GPT-3 has the same architecture).
bool is_family(const std::string& family);
// The names model_from_json accepts.
const std::vector<std::string>& model_fields();

// Reads a spec at `pointer` of `file`; errors name both ("plan.json:/meta/model_spec/hidden: ...").
// Missing optional fields get the family's defaults (see model_spec.cpp); unknown fields are refused.
ModelSpec model_from_json(const nlohmann::json& j, const std::string& file, const std::string& pointer = "");
nlohmann::json model_to_json(const ModelSpec& m);

}  // namespace protwin::traces
