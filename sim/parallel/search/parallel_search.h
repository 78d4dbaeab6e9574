// Enumerates 4D-parallel layouts as Fujii et al.'s tools/memory_estimate/optimal_setting_search.py
// does (TP, CP ∈ {1,2,4,8} with TP·CP ≤ GPUs per node; PP a divisor of L; DP = GPUs/(TP·CP·PP);
// MBS = 1, 2, 4, ... while MBS·DP ≤ GBS), checks every constraint, estimates the rest and sorts
// them by memory. Unlike the authors' script it keeps every rejected candidate with its reason.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/estimator/parallel_constraints.h"

namespace protwin::sim::parallel {

struct SearchSpace {
  int64_t gpus = 0;
  int64_t gpus_per_node = 0;
  double gpu_memory_gb = 0;  // nominal, compared with GiB totals as the authors do
  int64_t seq = 0;
  int64_t gbs = 0;
  double fit_fraction = 0.8;  // the authors' safety rule
  // Also PP sizes that do not divide L but divide L + 2, with the first and last stage one layer
  // short (Llama 3 405B's split, stage_layers.h: one_short_ends).
  bool uneven_stages = false;
};

// One enumerated candidate. dp is 0 when GPUs is not a multiple of TP·CP·PP; mbs is 0 when the
// whole (TP, CP, PP) triple was rejected before micro-batch sizes were generated.
struct SearchCandidate {
  int64_t tp = 1, cp = 1, pp = 1, dp = 0, mbs = 0;
  StageSplit split;           // uneven first/last stages (uneven_stages only)
  bool feasible = false;      // passed every constraint (estimate is set)
  bool fits = false;          // feasible and total ≤ fit_fraction · memory
  std::string reason_key;     // constraint_key() or "over_80pct"; empty when it fits
  std::string reason;         // human message
  MemoryEstimate estimate;
};

// Named apart from the offload search's SearchResult (sim/offload/search/search.h) when both lived in
// protwin::sim, where two classes of one name broke the One Definition Rule (the linker kept one
// inline destructor for both: a crash); each part now has its own namespace (issue 17).
struct ParallelSearchResult {
  std::vector<SearchCandidate> fitting;   // sorted by total memory, then (tp, cp, pp, mbs)
  std::vector<SearchCandidate> over;      // feasible but above the threshold, same order
  std::vector<SearchCandidate> rejected;  // constraint violations, in enumeration order
  std::map<std::string, int64_t> rejected_by_reason;  // includes "over_80pct"
  int64_t enumerated = 0;                 // fitting + over + rejected
  double threshold_gib = 0;
};

ParallelSearchResult search_parallel_configs(const ModelSpec& model, const SearchSpace& space,
                                     const EstimateOptions& opt = {});

}  // namespace protwin::sim::parallel
