// The collectives' cost line (issue 23): alpha + bus bytes / bus bandwidth, the simulator's form
// (hwmodels/collective_model.h), fitted per kind by least squares on timed probe rows
// (collective_probe.h). Torch-free, so the machine writer and its tests use it alone.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace protwin::rt {

// One timed collective: `kind` as in the machine file (all_gather, reduce_scatter, all_reduce,
// broadcast), its bus bytes per rank (NCCL's busbw convention, as RankGroup's throttle) and the
// median seconds one call took.
struct CollectiveRow {
  std::string kind;
  double bus_bytes = 0;
  double seconds = 0;
};

struct CollectiveFit {
  double alpha_us = 0;    // intercept, clamped at 0 (the machine file takes no negative cost)
  double busbw_GBps = 0;  // 1 / slope
  int rows = 0;
};

// Ordinary least squares per kind. Throws protwin::Error (naming the kind) when a kind has fewer
// than two distinct sizes or its time does not grow with the bytes.
std::map<std::string, CollectiveFit> fit_collectives(const std::vector<CollectiveRow>& rows);

}  // namespace protwin::rt
