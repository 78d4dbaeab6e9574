// calibrate --ranks runs every plan several times, one plan after another (issue 23); this merges
// one plan's runs (the `protwin train --json` output of each, under mpirun) into one.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::cli {

// The last run's fields, with: iteration_s = the steps of all runs without each run's first
// (warm-up) step; rank_probes = per rank, the probes of those steps; the peaks
// (peak_device_bytes, peak_device_reserved_bytes, peak_pinned_bytes, peak_pageable_bytes) and
// wait_cpu_share = their medians over the runs (that have it). `runs` must not be empty.
nlohmann::json merge_runs(const std::vector<nlohmann::json>& runs);

}  // namespace protwin::cli
