// The feasibility rules of a 4D-parallel layout, checked before any estimate (REFERENCE §3):
// L % PP (or the uneven first/last split, stage_layers.h), heads % TP, KV heads % TP, seq % (2·CP) when CP > 1, GBS % (MBS·DP), TP·CP·PP·DP = GPUs,
// and (interleaved schedule) layers per stage % virtual stages.
#pragma once

#include <optional>
#include <string>

#include "sim/parallel/estimator/memory_estimate.h"

namespace protwin::sim::parallel {

enum class ConstraintKind {
  kPositive,       // a size is < 1
  kModelSize,      // the model has more than kMaxParameters parameters (int64 counts would overflow)
  kLayersPp,       // L % PP, or an uneven split that does not fit
  kHeadsTp,        // a % TP
  kKvHeadsTp,      // k % TP
  kSeqCp,          // s % (2·CP)
  kVirtualStages,  // (L / PP) % virtual stages
  kGbsMbsDp,       // GBS % (MBS·DP), incl. GBS < MBS·DP
  kWorldSize,      // TP·CP·PP·DP ≠ GPUs, or more than kMaxWorldSize
  kTpCpPerNode,    // TP·CP > GPUs per node (search only)
  kFsdpDpOnly,     // method fsdp with TP, CP or PP > 1 (FSDP FULL_SHARD shards over DP only)
};

// Short stable key, e.g. "layers_pp", used in JSON counts.
const char* constraint_key(ConstraintKind k);

struct ConstraintViolation {
  ConstraintKind kind;
  std::string message;  // starts with the flag, e.g. "--pp 3: layers 32 is not divisible by PP 3"
};

// The first violated rule in the order above, or nothing.
std::optional<ConstraintViolation> find_violation(const ModelSpec& model,
                                                  const ParallelConfig& cfg,
                                                  const EstimateOptions& opt = {});
// The most parameters a model may have (10^15, a thousand times today's largest): exact counts
// stay far inside int64.
inline constexpr double kMaxParameters = 1e15;

// TP·CP·PP·DP for sizes >= 1, or -1 when it exceeds kMaxWorldSize (computed without overflow).
int64_t world_size(int64_t tp, int64_t cp, int64_t pp, int64_t dp);

// Throws protwin::Error with the first violation's message.
void check_constraints(const ModelSpec& model, const ParallelConfig& cfg,
                       const EstimateOptions& opt = {});

}  // namespace protwin::sim::parallel
