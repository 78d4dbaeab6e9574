#include "sim/parallel/estimator/memory_estimate.h"

#include <iterator>

#include "sim/parallel/estimator/estimate_methods.h"
#include "sim/parallel/estimator/parallel_constraints.h"
#include "traces/error.h"

namespace protwin::sim::parallel {

// Names by enum value.
constexpr const char* kMethodNames[] = {"fujii", "megatron", "korthikanti", "zero", "fsdp"};
constexpr const char* kRecomputeNames[] = {"none", "selective", "full"};
static_assert(std::size(kMethodNames) == static_cast<size_t>(EstimateMethod::kFsdp) + 1, "a name per method");
static_assert(std::size(kRecomputeNames) == static_cast<size_t>(Recompute::kFull) + 1, "a name per granularity");

const char* method_name(EstimateMethod m) { return kMethodNames[static_cast<size_t>(m)]; }

EstimateMethod parse_method(const std::string& s, const std::string& flag) {
  for (size_t i = 0; i < std::size(kMethodNames); ++i)
    if (s == kMethodNames[i]) return static_cast<EstimateMethod>(i);
  throw Error(flag + " " + s + ": unknown method; expected fujii, megatron, korthikanti, zero or fsdp");
}

const char* recompute_name(Recompute r) { return kRecomputeNames[static_cast<size_t>(r)]; }

Recompute parse_recompute(const std::string& s, const std::string& flag) {
  for (size_t i = 0; i < std::size(kRecomputeNames); ++i)
    if (s == kRecomputeNames[i]) return static_cast<Recompute>(i);
  throw Error(flag + " " + s + ": unknown recompute granularity; expected none, selective or full");
}

int64_t transformer_parameter_count(const ModelSpec& m) {
  const int64_t h = m.hidden, q = m.head_dim() * m.heads, kv = m.head_dim() * m.kv_heads;
  const int64_t attention = 2 * h * q + 2 * h * kv;           // Q, O and K, V projections
  const int64_t mlp = (m.swiglu() ? 3 : 2) * h * m.ffn_hidden;  // gate, up, down (or fc1, fc2)
  const int64_t norms = 2 * h;                                // two RMSNorm weights
  return m.layers * (attention + mlp + norms) + h;           // + final norm
}

int64_t parameter_count(const ModelSpec& m, int64_t vocab) {
  return transformer_parameter_count(m) + (m.tied_embeddings ? 1 : 2) * m.hidden * vocab;
}

int64_t padded_vocab(int64_t vocab, int64_t multiple, int64_t tp) {
  if (multiple <= 0) return vocab;
  const int64_t step = multiple * tp;
  return (vocab + step - 1) / step * step;
}

void check_estimate_options(const EstimateOptions& opt) {
  PROTWIN_CHECK(opt.zero_stage >= 0 && opt.zero_stage <= 3, "--zero-stage ", opt.zero_stage,
                ": expected 0, 1, 2 or 3");
  PROTWIN_CHECK(opt.num_microbatches >= 0, "--num-microbatches ", opt.num_microbatches,
                ": must be at least 1");
  PROTWIN_CHECK(opt.fsdp_param_bytes == 2 || opt.fsdp_param_bytes == 4, "FSDP param dtype: ",
                opt.fsdp_param_bytes, " bytes; expected 2 (bf16/fp16) or 4 (fp32)");
  PROTWIN_CHECK(opt.pad_vocab_multiple >= 0, "--pad-vocab ", opt.pad_vocab_multiple,
                ": must be 0 (off) or a positive multiple");
  // Padded V = ceil(V / (multiple * TP)) * multiple * TP must stay far from int64's limit.
  PROTWIN_CHECK(opt.pad_vocab_multiple <= kMaxPadVocab, "--pad-vocab ", opt.pad_vocab_multiple,
                ": expected at most ", kMaxPadVocab, " (Megatron pads to a multiple of 128)");
}

MemoryEstimate estimate_memory(const ModelSpec& model, const ParallelConfig& cfg,
                               const EstimateOptions& opt) {
  check_estimate_options(opt);
  check_constraints(model, cfg, opt);
  MemoryEstimate e;
  e.method = opt.method;
  e.vocab_used = padded_vocab(model.vocab, opt.pad_vocab_multiple, cfg.tp);
  e.params_total = parameter_count(model, e.vocab_used);
  namespace d = estimate_detail;
  if (cfg.split.uneven()) {
    PROTWIN_CHECK(opt.method == EstimateMethod::kFujii, "--first-stage-layers/--last-stage-layers: only the fujii ",
                  "method estimates uneven stages, not ", method_name(opt.method));
    // Every stage by Fujii's per-stage formulas; the largest is the layout's estimate.
    const std::vector<int64_t> layers = stage_layers(model.layers, cfg.pp, cfg.split);
    MemoryEstimate best;
    for (int64_t s = 0; s < cfg.pp; ++s) {
      MemoryEstimate x = e;
      d::fujii_stage(model, cfg, opt, s, layers[static_cast<size_t>(s)], x);
      x.activations_bytes = x.activation_layers_bytes + x.activation_embedding_bytes + x.activation_output_bytes;
      x.total_bytes = x.weights_grads_optimizer_bytes + x.activations_bytes;
      if (s == 0 || x.total_bytes > best.total_bytes) best = std::move(x);
    }
    best.notes.push_back(protwin::detail::concat("uneven stages (first ", layers.front(), ", last ", layers.back(),
                                                 " layers): the largest stage, ", best.stage, ", by Fujii's formulas per stage"));
    return best;
  }
  switch (opt.method) {
    case EstimateMethod::kFujii:
      d::fujii_model_states(model, cfg, opt, e);
      d::fujii_activations(model, cfg, opt, e);
      break;
    case EstimateMethod::kMegatron:
      d::megatron_estimate(model, cfg, opt, e);
      break;
    case EstimateMethod::kKorthikanti:
      d::fujii_model_states(model, cfg, opt, e);
      d::korthikanti_activations(model, cfg, opt, e);
      break;
    case EstimateMethod::kZero:
      d::zero_model_states(model, cfg, opt, e);
      break;
    case EstimateMethod::kFsdp:
      // Activations at TP = CP = PP = 1 by the formula written for the model's kind: Fujii et al.'s
      // for Llama-style SwiGLU layers, Korthikanti et al.'s for GPT-style 4h GeLU layers (MPT).
      d::fsdp_model_states(model, cfg, opt, e);
      if (model.swiglu()) d::fujii_activations(model, cfg, opt, e);
      else d::korthikanti_activations(model, cfg, opt, e);
      break;
  }
  e.stage_layers = model.layers / cfg.pp;
  e.activations_bytes =
      e.activation_layers_bytes + e.activation_embedding_bytes + e.activation_output_bytes;
  e.total_bytes = e.weights_grads_optimizer_bytes + e.activations_bytes;
  return e;
}

}  // namespace protwin::sim::parallel
