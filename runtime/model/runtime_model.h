// Which models the runtime runs: a traces::ModelSpec (the one model description) of the GPT-2 or
// LLaMA family exactly as its transformer implements them, with the block indices of the one
// parameter layout (traces/parameter_layout.h). Torch-free, so a chunk store or the CLI can plan
// buffers without including LibTorch.
//
//   gpt2   LayerNorm with bias, learned positions, GeLU(tanh) MLP, fused q/k/v, tied LM head, biases
//   llama  RMSNorm, RoPE, SwiGLU MLP, grouped-query attention, untied LM head, no biases
#pragma once

#include <cstdint>
#include <string>

#include "traces/model_spec.h"
#include "traces/parameter_layout.h"

namespace protwin::rt {

using traces::ModelSpec;
using traces::ParamTensor;
using traces::stored_parameters;

// Constants of the runtime's transformer (not spec fields: every model it runs uses these).
inline constexpr double kNormEps = 1e-5;
inline constexpr double kRopeTheta = 10000.0;  // LLaMA only

inline bool is_gpt2(const ModelSpec& m) { return m.family == "gpt2"; }

// Refuses a spec the runtime's transformer does not implement, or a sequence longer than its
// learned positions: "<file>:<pointer>/<field>: the runtime's GPT-2 needs ..." (`pointer` is where
// the spec sits in `file`, e.g. "/meta/model_spec").
void check_runtime_model(const ModelSpec& m, int64_t seq, const std::string& file, const std::string& pointer);

// Block indices: 0 = embedding, 1..layers = decoder layers, layers + 1 = head.
inline int64_t embedding_block() { return 0; }
inline int64_t layer_block(int64_t layer) { return layer + 1; }
inline int64_t head_block(const ModelSpec& m) { return m.layers + 1; }

}  // namespace protwin::rt
