// Functional decoder-only transformer (GPT-2 and LLaMA flavours) with an explicit forward and
// backward per block, llm.c style. No autograd: every function runs under at::NoGradGuard.
//
// Weights are borrowed, never owned: the structs below hold tensor handles, which may be views
// into flat chunk buffers (bind_weights takes any tensors of the right shapes, in execution order).
// Saved activations are structs the caller owns, so the runtime can keep, swap or drop them;
// running a layer's forward again from `LayerActs::input` reproduces them bitwise (recompute).
// Backward functions ACCUMULATE (+=) into the gradient structs, which have the same layout as the
// weights (gradients may be views into grad chunks as well).
//
// Dtype follows the tensors: fp32 is the tested reference; bf16 weights and activations also work
// (gradients then accumulate in bf16 too).
// Shapes: B batch, T sequence, C hidden, F ffn_hidden, V vocab, NH heads, KH kv_heads, D head dim.
// Runtime header: includes ATen, so only runtime/ and cli/ include it.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include "runtime/model/runtime_model.h"

namespace protwin::rt {

struct EmbeddingWeights {
  at::Tensor wte;  // [V, C]
  at::Tensor wpe;  // [max_positions, C]  GPT-2 only
};

// One decoder layer. GPT-2 uses the first group of fields, LLaMA the second; the rest stay undefined.
struct LayerWeights {
  // GPT-2
  at::Tensor ln1_w, ln1_b;      // [C]
  at::Tensor qkv_w, qkv_b;      // [3C, C], [3C]
  at::Tensor proj_w, proj_b;    // [C, C], [C]
  at::Tensor ln2_w, ln2_b;      // [C]
  at::Tensor fc_w, fc_b;        // [F, C], [F]
  at::Tensor fcproj_w, fcproj_b;  // [C, F], [C]
  // LLaMA
  at::Tensor attn_norm_w;       // [C]
  at::Tensor wq, wk, wv, wo;    // [C, C], [KH*D, C], [KH*D, C], [C, C]
  at::Tensor mlp_norm_w;        // [C]
  at::Tensor w_gate, w_up;      // [F, C]
  at::Tensor w_down;            // [C, F]
};

struct HeadWeights {
  at::Tensor norm_w;   // [C]
  at::Tensor norm_b;   // [C]  GPT-2 only
  at::Tensor lm_head;  // [V, C]  GPT-2: the same tensor as EmbeddingWeights::wte (tied)
};

struct ModelWeights {
  EmbeddingWeights embedding;
  std::vector<LayerWeights> layers;
  HeadWeights head;
};

// Binds tensors given in stored_parameters(cfg) order (shapes checked) to the block structs; ties GPT-2's
// LM head to wte. Works for weights and for gradients alike.
ModelWeights bind_weights(const ModelSpec& cfg, const std::vector<at::Tensor>& flat);
// Binds only block `block`'s parameters from `flat` (stored_parameters(cfg) order; entries of other
// blocks are ignored and may be undefined). GPT-2's head also binds its tied LM head to
// flat[0] (the token embedding). Works for weights and for gradients alike.
void bind_block(const ModelSpec& cfg, int64_t block, const std::vector<at::Tensor>& flat,
                ModelWeights& w);
// The inverse: tensors in stored_parameters(cfg) order (the tied LM head appears once, as wte).
std::vector<at::Tensor> flatten_weights(const ModelSpec& cfg, const ModelWeights& w);

// Fresh zero tensors in stored_parameters(cfg) order.
std::vector<at::Tensor> allocate_params(const ModelSpec& cfg, const at::TensorOptions& options);
// GPT-2 style initialisation: matrices and embeddings N(0, 0.02), norm weights 1, biases 0.
void init_params(const ModelSpec& cfg, const std::vector<at::Tensor>& flat, uint64_t seed);

struct EmbeddingActs {
  at::Tensor tokens;  // [B, T] int64
};

struct LayerActs {
  at::Tensor input;                          // [B, T, C]  the block input (what CKPT keeps)
  at::Tensor norm1, norm1_mean, norm1_rstd;  // [B, T, C], [B, T, 1] (mean: LayerNorm only)
  at::Tensor q;                              // [B, NH, T, D] (after RoPE for LLaMA)
  at::Tensor k, v;                           // [B, KH, T, D] (k after RoPE for LLaMA)
  at::Tensor att;                            // [B, NH, T, T] softmax probabilities
  at::Tensor atty;                           // [B, T, C] attention output before projection
  at::Tensor resid;                          // [B, T, C] input + attention branch
  at::Tensor norm2, norm2_mean, norm2_rstd;  // [B, T, C], [B, T, 1]
  at::Tensor fc;                             // [B, T, F] GPT-2: pre-GeLU; LLaMA: gate pre-SiLU
  at::Tensor up;                             // [B, T, F] LLaMA only
  at::Tensor act;                            // [B, T, F] GeLU(fc) or SiLU(gate) * up

  // Every defined tensor, for byte accounting, swapping and bitwise comparison (fixed order).
  std::vector<at::Tensor*> tensors();
  int64_t bytes();
};

struct HeadActs {
  at::Tensor input;                       // [B, T, C]
  at::Tensor norm, norm_mean, norm_rstd;  // [B, T, C], [B, T, 1]
  at::Tensor probs;                       // [B, T, V] softmax of the logits
  at::Tensor targets;                     // [B, T] int64
};

// ---- per-block forward: returns the block output; fills `saved` unless it is null ----
at::Tensor embedding_forward(const ModelSpec& cfg, const EmbeddingWeights& w,
                             const at::Tensor& tokens, EmbeddingActs* saved);
at::Tensor layer_forward(const ModelSpec& cfg, const LayerWeights& w, const at::Tensor& x,
                         LayerActs* saved);
// Returns the mean cross-entropy over the B*T tokens (a 0-dim tensor).
at::Tensor head_forward(const ModelSpec& cfg, const HeadWeights& w, const at::Tensor& x,
                        const at::Tensor& targets, HeadActs* saved);

// ---- per-block backward: returns the input gradient; accumulates weight gradients ----
// `dloss` scales the loss gradient (1 for one micro-batch, 1/n when accumulating n of them).
at::Tensor head_backward(const ModelSpec& cfg, const HeadWeights& w, const HeadActs& saved,
                         HeadWeights& grads, double dloss = 1.0);
at::Tensor layer_backward(const ModelSpec& cfg, const LayerWeights& w, const LayerActs& saved,
                          const at::Tensor& dout, LayerWeights& grads);
void embedding_backward(const ModelSpec& cfg, const EmbeddingActs& saved, const at::Tensor& dx,
                        EmbeddingWeights& grads);

// ---- whole model, every activation kept (tests and the simplest executor) ----
struct ModelActs {
  EmbeddingActs embedding;
  std::vector<LayerActs> layers;
  HeadActs head;
};
double model_forward(const ModelSpec& cfg, const ModelWeights& w, const at::Tensor& tokens,
                     const at::Tensor& targets, ModelActs& acts);
// Returns the gradient w.r.t. the embedding output (the input gradient of layer 0).
at::Tensor model_backward(const ModelSpec& cfg, const ModelWeights& w, const ModelActs& acts,
                          ModelWeights& grads, double dloss = 1.0);

}  // namespace protwin::rt
