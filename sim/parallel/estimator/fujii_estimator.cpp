// Fujii, Watanabe, Yokota (arXiv 2411.06465), transcribed from the authors' code:
// okoge-kaz/Megatron-LM megatron/training/theoretical_memory_usage.py (commit 55d369bf, the one
// their tools/memory_estimate/tests_memory_consumption_estimator.py tests). Term order follows that
// file so that each line can be checked against it.
#include <algorithm>

#include "sim/parallel/estimator/estimate_methods.h"

namespace protwin::sim::parallel::estimate_detail {

double schedule_factor(const ParallelConfig& c, const EstimateOptions& o) {
  const double p = static_cast<double>(c.pp);
  if (o.virtual_stages > 0)  // interleaved 1F1B keeps more micro-batches in flight
    return 1.0 + (p - 1.0) / (p * static_cast<double>(o.virtual_stages));
  if (c.pp > 1 && o.num_microbatches > 0)  // fewer micro-batches than stages: fewer in flight
    return std::min(1.0, static_cast<double>(o.num_microbatches) / p);
  return 1.0;
}

void fujii_model_states(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                        MemoryEstimate& out) {
  const double h = static_cast<double>(m.hidden), t = static_cast<double>(c.tp);
  const double p = static_cast<double>(c.pp), d = static_cast<double>(c.dp);
  const double cp = static_cast<double>(c.cp);
  const double p_tr = static_cast<double>(transformer_parameter_count(m));
  const double embedding = h * static_cast<double>(out.vocab_used);
  // First stage: its share of the layers (the final norm lives on the last stage) + the embedding.
  double n = ((p_tr - h) / p + embedding) / t;
  // Without PP the first stage is also the last: LM head and final norm (untied models only, as
  // in the authors' code; a tied head shares the embedding).
  if (!m.tied_embeddings && c.pp == 1) n += embedding / t + h;
  const double g = o.fp32_grad_accum ? 4.0 : 2.0;
  // bf16 weight + gradient (g) + fp32 master, momentum, variance (12), the latter sharded over
  // DP·CP by Megatron's distributed optimizer.
  out.params_per_gpu = n;
  out.bytes_per_param = o.distributed_optimizer ? (2.0 + g) + 12.0 / d / cp : 2.0 + g + 12.0;
  out.weights_grads_optimizer_bytes = n * out.bytes_per_param;
}

namespace {

// One layer's activation bytes for one micro-batch, before the division by TP: the per-layer term
// of the authors' code (and the full-recompute extension).
double layer_activation_bytes(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                              MemoryEstimate& out) {
  const double s = static_cast<double>(c.seq) / static_cast<double>(c.cp);  // s' = s / CP
  const double b = static_cast<double>(c.mbs), h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads), k = static_cast<double>(m.kv_heads);
  const double f = static_cast<double>(m.ffn_hidden);
  const bool no_scores = o.recompute == Recompute::kSelective || o.flash_attention;
  const bool hidden_dropout = o.hidden_dropout != 0.0, attention_dropout = o.attention_dropout != 0.0;

  double layer = 0;
  if (o.recompute == Recompute::kFull) {
    // Extension: the authors' code ignores full recompute; keep only each layer's bf16 input
    // (Korthikanti et al. Table 2, sharded by SP).
    layer = 2 * s * b * h;
    out.notes.push_back("recompute full: per-layer activations 2*s*b*h/t (Korthikanti Table 2); "
                        "the authors' code has no full-recompute case");
  } else {
    layer = 2 * s * b * h                                              // input LayerNorm
            + 2 * s * b * h                                            // x -> Q, K, V
            + 2 * s * b * h                                            // Q for Q*K^T
            + 2 * s * b * h * (k / a)                                  // K (GQA)
            + (no_scores ? 0 : 2 * b * s * s * a)                      // softmax(Q*K^T)
            + (!attention_dropout || no_scores ? 0 : 1 * b * s * s * a)  // attention dropout mask
            + 2 * b * s * h * (k / a)                                  // V (GQA)
            + (no_scores ? 0 : 2 * b * a * s * s)                      // dropout output for *V
            + 2 * b * s * h                                            // attention output linear
            + (hidden_dropout ? b * s * h : 0)                         // attention dropout mask
            + 2 * b * s * h                                            // post-attention norm
            + 2 * b * s * h                                            // up & gate input
            + 4 * 2 * b * s * f                                        // SwiGLU intermediates
            + (hidden_dropout ? b * s * h : 0);                        // MLP dropout mask
  }
  if (!m.swiglu() || !m.rmsnorm())
    out.notes.push_back("the authors' activation formula is written for Llama (RMSNorm, SwiGLU, no "
                        "biases); this model is approximated by it");
  return layer;
}

// Embedding input (and its dropout mask) of ONE micro-batch on the first stage.
double embedding_activation_bytes(const ParallelConfig& c, const ModelSpec& m, const EstimateOptions& o) {
  const double s = static_cast<double>(c.seq) / static_cast<double>(c.cp);
  const double b = static_cast<double>(c.mbs), h = static_cast<double>(m.hidden), t = static_cast<double>(c.tp);
  const double input = o.embedding_input == EmbeddingInputTerm::kAuthors ? 8 * s * b * h / t  // int64 ids x h
                                                                         : 8 * s * b / t;     // upstream
  // Embedding dropout mask: full sequence, not divided by TP, as in the authors' code.
  return input + (o.hidden_dropout != 0.0 ? static_cast<double>(c.seq) * b * h : 0.0);
}

}  // namespace

void fujii_activations(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out) {
  const double s = static_cast<double>(c.seq) / static_cast<double>(c.cp);  // s' = s / CP
  const double b = static_cast<double>(c.mbs), h = static_cast<double>(m.hidden);
  const double t = static_cast<double>(c.tp);
  const double p = static_cast<double>(c.pp), v = static_cast<double>(out.vocab_used);
  const bool hidden_dropout = o.hidden_dropout != 0.0;
  const double layer = layer_activation_bytes(m, c, o, out);
  // L, not L/p: the first 1F1B stage holds p micro-batches of L/p layers.
  const double layers = layer * static_cast<double>(m.layers) / t;
  const double embedding_input = o.embedding_input == EmbeddingInputTerm::kAuthors
                                     ? 8 * s * b * h * p / t  // authors' code (int64 ids × h)
                                     : 8 * s * b * p / t;     // upstream Megatron (int64 ids)
  // Embedding dropout mask: full sequence, not divided by TP, as in the authors' code.
  const double embedding_dropout =
      hidden_dropout ? static_cast<double>(c.seq) * b * h * p : 0.0;
  const double factor = schedule_factor(c, o);
  out.activation_schedule_factor = factor;
  out.activation_layers_bytes = layers * factor;
  out.activation_embedding_bytes = (embedding_input + embedding_dropout) * factor;
  // Without PP: final-norm output and fp32 logits for the cross entropy.
  out.activation_output_bytes = c.pp == 1 ? 4 * s * b * h * (1 + v / h) / t : 0.0;
}

void fujii_stage(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o, int64_t stage,
                 int64_t stage_layers, MemoryEstimate& out) {
  const double h = static_cast<double>(m.hidden), t = static_cast<double>(c.tp);
  const double d = static_cast<double>(c.dp), cp = static_cast<double>(c.cp);
  const double s = static_cast<double>(c.seq) / cp, b = static_cast<double>(c.mbs);
  const double v = static_cast<double>(out.vocab_used);
  const bool first = stage == 0, last = stage == c.pp - 1;
  // Model states: this stage's layers (P_tr less the final norm, per layer), the embedding on the
  // first stage, the final norm and the LM head on the last (Megatron keeps a copy of a tied
  // embedding there for the head).
  const double per_layer = static_cast<double>(transformer_parameter_count(m) - m.hidden) /
                           static_cast<double>(m.layers);
  const double n = (static_cast<double>(stage_layers) * per_layer + (first ? h * v : 0.0) +
                    (last ? h * v + h : 0.0)) / t;
  const double g = o.fp32_grad_accum ? 4.0 : 2.0;
  out.params_per_gpu = n;
  out.bytes_per_param = o.distributed_optimizer ? (2.0 + g) + 12.0 / d / cp : 2.0 + g + 12.0;
  out.weights_grads_optimizer_bytes = n * out.bytes_per_param;
  // Activations: 1F1B stage s holds min(p - s, m) micro-batches in flight (p - s when m is not
  // given); the first stage also the embedding input, the last the final norm and fp32 logits of
  // the one micro-batch it works on.
  const int64_t in_flight_i = o.num_microbatches > 0 ? std::min(c.pp - stage, o.num_microbatches) : c.pp - stage;
  const double in_flight = static_cast<double>(in_flight_i);
  const double layer = layer_activation_bytes(m, c, o, out);
  out.activation_schedule_factor = in_flight / static_cast<double>(c.pp - stage);
  out.activation_layers_bytes = layer * static_cast<double>(stage_layers) * in_flight / t;
  out.activation_embedding_bytes = first ? embedding_activation_bytes(c, m, o) * in_flight : 0.0;
  out.activation_output_bytes = last ? 4 * s * b * h * (1 + v / h) / t : 0.0;
  out.stage = stage;
  out.stage_layers = stage_layers;
}

}  // namespace protwin::sim::parallel::estimate_detail
