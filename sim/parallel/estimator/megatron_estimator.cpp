// Upstream Megatron-LM's theoretical memory (dense GPT/Llama models only; no MoE, MLA or MTP):
// NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py at commit
// 00caa53af30912914981c86f39db123961678bbd, functions compute_weight_and_optimizer_memory,
// compute_activation_memory (sequence parallel + selective recompute) and
// compute_activation_memory_without_sp (every other setting), chosen as report_theoretical_memory
// chooses. It ignores context parallelism, flash attention, dropout settings, GQA in activations
// and --no-fp32-grad-accum; the notes say so.
#include "sim/parallel/estimator/estimate_methods.h"

namespace protwin::sim::parallel::estimate_detail {

void megatron_estimate(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out) {
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double k = static_cast<double>(m.kv_heads), f = static_cast<double>(m.ffn_hidden);
  const double t = static_cast<double>(c.tp), p = static_cast<double>(c.pp);
  const double d = static_cast<double>(c.dp), v = static_cast<double>(out.vocab_used);
  const double L = static_cast<double>(m.layers);

  // Weights and optimizer.
  const double q_ratio = static_cast<double>(m.head_dim() * m.heads) / h;
  const double gated = m.swiglu() ? 1.5 : 1.0;
  const double norm = m.rmsnorm() ? 1.0 : 2.0;  // LayerNorm has a bias
  const double self_attn = 2 * h * h * ((1 + k / a) * q_ratio);
  const double layer = 2 * h * (f * gated + norm) + self_attn;
  const double embedding = h * v;
  const double block = layer * L + norm * h;  // + final norm
  double n = (block / p + embedding) / t;
  if (!m.tied_embeddings && c.pp == 1) n += embedding / t;
  out.params_per_gpu = n;
  out.bytes_per_param = o.distributed_optimizer ? 6.0 + 12.0 / d : 18.0;
  out.weights_grads_optimizer_bytes = n * out.bytes_per_param;

  // Activations, full sequence (no CP split), micro-batch b.
  const double s = static_cast<double>(c.seq), b = static_cast<double>(c.mbs);
  const double factor = schedule_factor(c, o);
  out.activation_schedule_factor = factor;
  const double embedding_terms = 8 * s * b * p    // input to embedding (int64 ids)
                                 + s * b * h * p;  // embedding dropout mask
  if (o.sequence_parallel && o.recompute == Recompute::kSelective) {
    // Korthikanti Table 2, TP + SP + selective recompute, generalised to h_ffn: sbh(18 + 4 h_ffn/h).
    out.activation_layers_bytes = s * b * h * (18 + 4 * (f / h)) * L * factor / t;
    out.activation_embedding_bytes = embedding_terms * factor / t;
    out.activation_output_bytes = c.pp == 1 ? s * b * h * 4 * (1 + v / h) / t : 0.0;
    out.notes.push_back("megatron: sequence-parallel branch (compute_activation_memory)");
  } else {
    // TP + selective recompute without SP: sbh(10 + 24/t), plus bf16 logits, then a 5 % margin.
    const double overhead = 1.05;
    out.activation_layers_bytes = s * b * h * (10 + 24 / t) * L * factor * overhead;
    out.activation_embedding_bytes = embedding_terms * factor * overhead;
    out.activation_output_bytes =
        c.pp == 1 ? (s * b * v / t + s * b * h) * 2 * overhead : 0.0;
    out.notes.push_back("megatron: branch without sequence parallelism "
                        "(compute_activation_memory_without_sp; used unless --recompute selective "
                        "with sequence parallelism)");
  }
  out.notes.push_back("megatron: upstream ignores CP, flash attention, dropout and GQA in "
                      "activations and always counts fp32 gradients (18 or 6 + 12/DP bytes per "
                      "parameter)");
}

}  // namespace protwin::sim::parallel::estimate_detail
