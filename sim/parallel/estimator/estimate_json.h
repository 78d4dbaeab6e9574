// JSON forms of memory estimates and parallel searches (what `protwin estimate --json` and
// `protwin estimate-search --json` print). GiB = 1024^3 bytes.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/search/parallel_search.h"

namespace protwin::sim::parallel {

// {"method", "params_total", "params_per_gpu", "bytes_per_param", "weights_grads_optimizer_GiB",
//  "activations_GiB" (null for ZeRO), "total_GiB", "fits_80pct" (null without gpu_memory_gb),
//  "activations": {...breakdown}, "notes"}
nlohmann::json estimate_to_json(const MemoryEstimate& e,
                                std::optional<double> gpu_memory_gb = std::nullopt);
nlohmann::json options_to_json(const EstimateOptions& o);
nlohmann::json config_to_json(const ParallelConfig& c);
// {"first": N or null, "last": N or null}: the layers of uneven first/last stages.
nlohmann::json stage_layers_json(const StageSplit& s);
// One row: {"tp", "cp", "pp", "dp", "mbs", ...estimate fields..., "reason"?}
nlohmann::json candidate_to_json(const SearchCandidate& c, double gpu_memory_gb);

}  // namespace protwin::sim::parallel
