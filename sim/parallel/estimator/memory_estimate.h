// Analytic per-GPU memory of 4D-parallel (DP, TP+SP, PP, CP) LLM training, first pipeline stage
// (with uneven first/last stages, Fujii's formulas per stage and the largest stage; fujii only).
//
// Default method: Fujii, Watanabe, Yokota, arXiv 2411.06465, as coded by the authors in
// okoge-kaz/Megatron-LM megatron/training/theoretical_memory_usage.py (REFERENCE §3). Alternatives:
// upstream Megatron-LM's formula, Korthikanti et al. 2022 (arXiv 2205.05198) and ZeRO model states
// (arXiv 1910.02054), and torch FSDP FULL_SHARD's (fsdp_estimator.cpp). The core takes the
// one model description (traces/model_spec.h), not the zoo.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/parallel/estimator/stage_layers.h"
#include "traces/model_spec.h"

namespace protwin::sim::parallel {

// The estimators read the one model description (traces/model_spec.h): h, h_ffn, L, a, k, V
// (unpadded; padding is EstimateOptions::pad_vocab_multiple), whether the LM head is tied, SwiGLU,
// RMSNorm. Head dimension h / a.
using traces::ModelSpec;

// One 4D-parallel layout. gbs and gpus are optional (0 = not given); they only add constraints.
struct ParallelConfig {
  int64_t seq = 0;  // s
  int64_t mbs = 1;  // b
  int64_t tp = 1;   // t
  int64_t cp = 1;   // c
  int64_t pp = 1;   // p
  int64_t dp = 1;   // d
  int64_t gbs = 0;
  int64_t gpus = 0;
  StageSplit split;  // uneven first/last stages (stage_layers.h); default: L / p each
};

// The largest world size (TP·CP·PP·DP) and vocabulary padding multiple the estimators accept:
// far beyond any cluster, far below where products of the sizes overflow int64.
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 24;
inline constexpr int64_t kMaxPadVocab = int64_t{1} << 20;

enum class EstimateMethod { kFujii, kMegatron, kKorthikanti, kZero, kFsdp };
enum class Recompute { kNone, kSelective, kFull };
// Embedding-input activation term: the authors' code has 8·s'·b·h·p/t, upstream Megatron 8·s·b·p/t.
enum class EmbeddingInputTerm { kAuthors, kUpstream };
// ZeRO model states: the paper's (2+2+12)Ψ split, or DeepSpeed's estimate_zero{2,3}_* functions.
enum class ZeroFormula { kPaper, kDeepSpeed };

// Every switch of the authors' code; defaults reproduce their unit tests.
struct EstimateOptions {
  EstimateMethod method = EstimateMethod::kFujii;
  bool distributed_optimizer = true;  // optimizer states sharded over DP·CP
  bool fp32_grad_accum = true;        // g = 4 bytes per gradient (else 2)
  bool sequence_parallel = true;      // megatron/korthikanti only; fujii assumes SP on
  bool flash_attention = true;        // drops the s² attention terms
  Recompute recompute = Recompute::kNone;
  double hidden_dropout = 0.0;        // only "== 0" matters, as in Megatron
  double attention_dropout = 0.0;
  int64_t virtual_stages = 0;     // interleaved 1F1B chunks per stage; 0 = non-interleaved
  int64_t num_microbatches = 0;   // 0 = unknown (assume ≥ p in flight)
  int64_t pad_vocab_multiple = 0; // 0 = no padding; Megatron pads V to a multiple of this·t
  EmbeddingInputTerm embedding_input = EmbeddingInputTerm::kAuthors;
  int zero_stage = 3;
  ZeroFormula zero_formula = ZeroFormula::kPaper;
  // fsdp: bytes of FSDP's MixedPrecision.param_dtype, the dtype units are gathered and computed in
  // (2: bf16/fp16, 4: fp32); the reduce dtype is fp32_grad_accum's (4 or 2 bytes).
  int fsdp_param_bytes = 2;
};

// The estimate for one layout, in bytes (double: 12/(d·c) bytes per parameter is fractional).
struct MemoryEstimate {
  EstimateMethod method = EstimateMethod::kFujii;
  int64_t params_total = 0;      // whole model (exact integer count)
  int64_t vocab_used = 0;        // V after optional padding
  double params_per_gpu = 0;     // first stage, one TP rank
  double bytes_per_param = 0;
  double weights_grads_optimizer_bytes = 0;
  bool activations_included = true;  // false for ZeRO (model states only)
  double fsdp_gathered_bytes = 0;    // fsdp: unsharded units and gradients live at the peak
                                     // (part of weights_grads_optimizer_bytes)
  double activation_layers_bytes = 0;      // transformer layers (after schedule factors)
  double activation_embedding_bytes = 0;   // embedding input + embedding dropout
  double activation_output_bytes = 0;      // final norm + LM head + cross entropy (p == 1)
  double activation_schedule_factor = 1;   // interleave penalty × min(1, m/p)
  double activations_bytes = 0;
  double total_bytes = 0;
  int64_t stage = 0;             // the pipeline stage estimated: 0, or for uneven splits the largest
  int64_t stage_layers = 0;      // its decoder layers
  std::vector<std::string> notes;          // what the method leaves out or assumes

  static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  double weights_grads_optimizer_gib() const { return weights_grads_optimizer_bytes / kGiB; }
  double activations_gib() const { return activations_bytes / kGiB; }
  double total_gib() const { return total_bytes / kGiB; }
};

const char* method_name(EstimateMethod m);
// "fujii" | "megatron" | "korthikanti" | "zero" | "fsdp"; anything else is a user error naming `flag`.
EstimateMethod parse_method(const std::string& s, const std::string& flag = "--method");
const char* recompute_name(Recompute r);
Recompute parse_recompute(const std::string& s, const std::string& flag = "--recompute");

// The estimators' parameter count of the whole model (Fujii's, which ModelSpec::parameter_count
// matches for Llama-style models): L·(2h·q + 2h·d_head·k + m·h·h_ffn + 2h) + h + (1|2)·h·V
// (q = d_head·a, m = 3 with SwiGLU else 2; RMSNorm weights only, no biases). Uses padded V if set.
int64_t parameter_count(const ModelSpec& model, int64_t vocab);
// Transformer stack incl. final norm (P_tr of REFERENCE §3).
int64_t transformer_parameter_count(const ModelSpec& model);
// V rounded up to a multiple of multiple·tp (0 = unchanged), as Megatron pads.
int64_t padded_vocab(int64_t vocab, int64_t multiple, int64_t tp);

// Checks the switches that do not depend on the layout (--zero-stage, --num-microbatches,
// --pad-vocab); errors name the flag. estimate and estimate-search share it.
void check_estimate_options(const EstimateOptions& opt);

// The estimate; checks the options and the constraints first (parallel_constraints.h).
MemoryEstimate estimate_memory(const ModelSpec& model, const ParallelConfig& cfg,
                               const EstimateOptions& opt = {});

}  // namespace protwin::sim::parallel
