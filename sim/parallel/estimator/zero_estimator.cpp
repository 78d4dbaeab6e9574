// ZeRO model states (Rajbhandari et al., arXiv 1910.02054, §5): mixed-precision Adam costs
// 2 + 2 + 12 bytes per parameter Ψ; with N_d data-parallel ranks stage 1 shards the 12 optimizer
// bytes (4Ψ + 12Ψ/N_d), stage 2 also the gradients (2Ψ + 14Ψ/N_d), stage 3 everything (16Ψ/N_d).
// --zero-formula deepspeed uses DeepSpeed's own estimators instead (deepspeed/runtime/zero/
// stage_1_and_2.py estimate_zero2_model_states_mem_needs and stage3.py
// estimate_zero3_model_states_mem_needs, no CPU offload): 4Ψ + 16Ψ/N for stages 1–2 and
// 4·largest_layer + 18Ψ/N for stage 3. Ψ is the first stage's per-TP-rank parameter count and
// N_d = DP·CP. Activations are not included.
#include <algorithm>
#include <cmath>

#include "sim/parallel/estimator/estimate_methods.h"

namespace protwin::sim::parallel::estimate_detail {

void zero_model_states(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out) {
  EstimateOptions plain = o;
  plain.distributed_optimizer = false;
  fujii_model_states(m, c, plain, out);  // sets params_per_gpu (Ψ)
  const double psi = out.params_per_gpu;
  const double nd = static_cast<double>(c.dp * c.cp);
  double bytes = 0;
  if (o.zero_formula == ZeroFormula::kPaper) {
    switch (o.zero_stage) {
      case 0: bytes = 16 * psi; break;
      case 1: bytes = 4 * psi + 12 * psi / nd; break;
      case 2: bytes = 2 * psi + 14 * psi / nd; break;
      default: bytes = 16 * psi / nd; break;
    }
  } else {
    const double h = static_cast<double>(m.hidden), t = static_cast<double>(c.tp);
    // Largest single module: embedding / LM head (h·V) or an MLP matrix (h·h_ffn), per TP rank.
    const double largest =
        std::max({h * static_cast<double>(out.vocab_used), h * static_cast<double>(m.ffn_hidden),
                  h * static_cast<double>(m.head_dim() * m.heads)}) / t;
    switch (o.zero_stage) {
      case 0: bytes = 16 * psi; break;  // DeepSpeed has no stage-0 estimator: plain DP
      case 1:
      case 2: bytes = 4 * psi + std::floor(16 * psi / nd); break;
      default: bytes = 4 * largest + std::floor(18 * psi / nd); break;
    }
  }
  out.weights_grads_optimizer_bytes = bytes;
  out.bytes_per_param = bytes / psi;
  out.activations_included = false;
  out.notes.push_back("zero: model states only (ZeRO stage " + std::to_string(o.zero_stage) +
                      (o.zero_formula == ZeroFormula::kPaper ? ", paper formula"
                                                              : ", DeepSpeed estimator") +
                      "); activations are not included");
}

}  // namespace protwin::sim::parallel::estimate_detail
