// calibrate --ranks' measured runs (issue 23): every plan runs several times, one plan after
// another, each run's ranks writing their reports of the same step.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "traces/report.h"

namespace protwin::cli {

// One plan's runs (the `protwin train --json` output of each, under mpirun) merged into one: the
// last run's fields, with: iteration_s = the steps of all runs without each run's first
// (warm-up) step; rank_probes = per rank, the probes of those steps; the peaks
// (peak_device_bytes, peak_device_reserved_bytes, peak_pinned_bytes, peak_pageable_bytes) and
// wait_cpu_share = their medians over the runs (that have it). `runs` must not be empty.
nlohmann::json merge_runs(const std::vector<nlohmann::json>& runs);

// Where each rank's measured step went: the ranks' reports of the same step (`protwin train
// --rank-reports DIR`) laid side by side on the host's monotonic clock (meta.steady_start_ns;
// ranks on one machine share it). Per rank: busy time per stream; of its collectives, the time it
// waited for the last peer to arrive (the op's latest start over the ranks minus this rank's start)
// and the rest (the transfer once every rank is there).
// One entry per rank: rank, iteration_s, start_offset_s (its iteration start after rank 0's),
// busy_s {stream: s}, collective_wait_s, collective_transfer_s. The reports must come from one
// plan (same op count) and carry meta.steady_start_ns.
nlohmann::json rank_breakdown(const std::vector<traces::Report>& reports);

}  // namespace protwin::cli
