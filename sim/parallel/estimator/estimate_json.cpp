#include "sim/parallel/estimator/estimate_json.h"

namespace protwin::sim::parallel {

using nlohmann::json;

json stage_layers_json(const StageSplit& s) {
  return {{"first", s.first > 0 ? json(s.first) : json(nullptr)}, {"last", s.last > 0 ? json(s.last) : json(nullptr)}};
}

json estimate_to_json(const MemoryEstimate& e, std::optional<double> gpu_memory_gb) {
  json j;
  j["method"] = method_name(e.method);
  j["params_total"] = e.params_total;
  j["vocab_used"] = e.vocab_used;
  j["params_per_gpu"] = e.params_per_gpu;
  j["bytes_per_param"] = e.bytes_per_param;
  j["weights_grads_optimizer_GiB"] = e.weights_grads_optimizer_gib();
  j["activations_GiB"] = e.activations_included ? json(e.activations_gib()) : json(nullptr);
  j["total_GiB"] = e.total_gib();
  if (e.method == EstimateMethod::kFsdp) j["fsdp_gathered_GiB"] = e.fsdp_gathered_bytes / MemoryEstimate::kGiB;
  if (e.activations_included) {
    j["activations"] = {{"layers_GiB", e.activation_layers_bytes / MemoryEstimate::kGiB},
                        {"embedding_GiB", e.activation_embedding_bytes / MemoryEstimate::kGiB},
                        {"output_GiB", e.activation_output_bytes / MemoryEstimate::kGiB},
                        {"schedule_factor", e.activation_schedule_factor}};
  }
  if (gpu_memory_gb) {
    j["gpu_memory_GB"] = *gpu_memory_gb;
    j["fits_80pct"] = e.total_gib() <= 0.8 * *gpu_memory_gb;
    j["fits_100pct"] = e.total_gib() <= *gpu_memory_gb;
  } else {
    j["fits_80pct"] = nullptr;
  }
  j["notes"] = e.notes;
  return j;
}

json options_to_json(const EstimateOptions& o) {
  return {{"method", method_name(o.method)},
          {"distributed_optimizer", o.distributed_optimizer},
          {"fp32_grad_accum", o.fp32_grad_accum},
          {"sequence_parallel", o.sequence_parallel},
          {"flash_attention", o.flash_attention},
          {"recompute", recompute_name(o.recompute)},
          {"hidden_dropout", o.hidden_dropout},
          {"attention_dropout", o.attention_dropout},
          {"virtual_stages", o.virtual_stages > 0 ? json(o.virtual_stages) : json(nullptr)},
          {"num_microbatches", o.num_microbatches > 0 ? json(o.num_microbatches) : json(nullptr)},
          {"pad_vocab_multiple", o.pad_vocab_multiple},
          {"embedding_input", o.embedding_input == EmbeddingInputTerm::kAuthors ? "8sbhp/t"
                                                                                : "8sbp/t"},
          {"zero_stage", o.zero_stage},
          {"zero_formula", o.zero_formula == ZeroFormula::kPaper ? "paper" : "deepspeed"}};
}

json config_to_json(const ParallelConfig& c) {
  json j = {{"seq", c.seq}, {"mbs", c.mbs}, {"tp", c.tp}, {"cp", c.cp}, {"pp", c.pp}, {"dp", c.dp}};
  j["gbs"] = c.gbs > 0 ? json(c.gbs) : json(nullptr);
  j["gpus"] = c.gpus > 0 ? json(c.gpus) : json(c.tp * c.cp * c.pp * c.dp);
  if (c.split.uneven()) j["stage_layers"] = stage_layers_json(c.split);
  return j;
}

json candidate_to_json(const SearchCandidate& c, double gpu_memory_gb) {
  json j = {{"tp", c.tp}, {"cp", c.cp}, {"pp", c.pp}};
  j["dp"] = c.dp > 0 ? json(c.dp) : json(nullptr);
  j["mbs"] = c.mbs > 0 ? json(c.mbs) : json(nullptr);
  if (c.split.uneven()) j["stage_layers"] = stage_layers_json(c.split);
  if (c.feasible) {
    const MemoryEstimate& e = c.estimate;
    j["params_per_gpu"] = e.params_per_gpu;
    j["bytes_per_param"] = e.bytes_per_param;
    j["weights_grads_optimizer_GiB"] = e.weights_grads_optimizer_gib();
    j["activations_GiB"] = e.activations_included ? json(e.activations_gib()) : json(nullptr);
    j["total_GiB"] = e.total_gib();
    j["fits_80pct"] = c.fits;
    j["fits_100pct"] = e.total_gib() <= gpu_memory_gb;
  }
  if (!c.reason_key.empty()) {
    j["reason_key"] = c.reason_key;
    j["reason"] = c.reason;
  }
  return j;
}

}  // namespace protwin::sim::parallel
