// The four estimation methods behind estimate_memory() (internal to sim/parallel/estimator/). Each fills the
// model-state and activation fields of `out`; the dispatcher has already checked the constraints
// and set vocab_used and params_total.
#pragma once

#include "sim/parallel/estimator/memory_estimate.h"

namespace protwin::sim::parallel::estimate_detail {

// Fujii et al.'s first-stage parameter count and bytes per parameter (shared by korthikanti).
void fujii_model_states(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                        MemoryEstimate& out);
void fujii_activations(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out);
// Fujii et al.'s formulas for one stage of an uneven split (stage_layers.h): model states and
// activations of `stage` holding `stage_layers` decoder layers. For stage 0 of an even split this
// is the first-stage estimate above, term for term.
void fujii_stage(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o, int64_t stage,
                 int64_t stage_layers, MemoryEstimate& out);
void megatron_estimate(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out);
void korthikanti_activations(const ModelSpec& m, const ParallelConfig& c,
                             const EstimateOptions& o, MemoryEstimate& out);
void zero_model_states(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out);
// torch FSDP FULL_SHARD's sharded states plus the units it holds unsharded at the peak.
void fsdp_model_states(const ModelSpec& m, const ParallelConfig& c, const EstimateOptions& o,
                       MemoryEstimate& out);

// Pipeline-schedule factor on first-stage activations, as Megatron computes it: the interleaved
// penalty 1 + (p−1)/(p·v), or min(1, m/p) when fewer micro-batches than stages are in flight.
double schedule_factor(const ParallelConfig& c, const EstimateOptions& o);

}  // namespace protwin::sim::parallel::estimate_detail
