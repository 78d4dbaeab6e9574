// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv 2205.05198): Table 2 per-layer activations and §4.3 for the embedding dropout and the
// output layer, first pipeline stage. The paper predates context parallelism and FlashAttention:
// CP is applied as s -> s/CP, and FlashAttention removes the 5as/h score term as selective
// recompute does. Model states come from fujii_model_states.
#include "sim/parallel/estimator/estimate_methods.h"

namespace protwin::sim::parallel::estimate_detail {

void korthikanti_activations(const ModelSpec& m, const ParallelConfig& c,
                             const EstimateOptions& o, MemoryEstimate& out) {
  const double s = static_cast<double>(c.seq) / static_cast<double>(c.cp);
  const double b = static_cast<double>(c.mbs), h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads), t = static_cast<double>(c.tp);
  const double p = static_cast<double>(c.pp), v = static_cast<double>(out.vocab_used);
  const double sbh = s * b * h;
  const bool no_scores = o.recompute == Recompute::kSelective || o.flash_attention;
  const double scores = no_scores ? 0.0 : 5 * a * s / (h * t);

  double layer = 0;
  if (o.recompute == Recompute::kFull)
    layer = 2 * sbh;                              // only the layer input is kept
  else if (o.sequence_parallel)
    layer = sbh * (34 / t + scores);              // TP + SP
  else
    layer = sbh * (10 + 24 / t + scores);         // TP only: norms and dropouts replicated
  const double factor = schedule_factor(c, o);
  out.activation_schedule_factor = factor;
  out.activation_layers_bytes = layer * static_cast<double>(m.layers) * factor;
  // §4.3: embedding dropout mask for p micro-batches (sharded by SP); output layer only without PP.
  out.activation_embedding_bytes = (o.sequence_parallel ? sbh * p / t : sbh * p) * factor;
  out.activation_output_bytes = c.pp == 1 ? 4 * sbh / t * (1 + v / h) : 0.0;
  out.notes.push_back("korthikanti: 34*s*b*h per layer assumes a 4h GeLU MLP with dropout; "
                      "CP applied as s -> s/CP");
}

}  // namespace protwin::sim::parallel::estimate_detail
