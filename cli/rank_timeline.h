// Where each rank's measured step went (issue 23): the ranks' reports of the same step (`protwin
// train --rank-reports DIR`) laid side by side on the host's monotonic clock (meta.steady_start_ns;
// ranks on one machine share it). Per rank: busy time per stream; of its collectives, the time it
// waited for the last peer to arrive (the op's latest start over the ranks minus this rank's start)
// and the rest (the transfer once every rank is there).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "traces/report.h"

namespace protwin::cli {

// One entry per rank: rank, iteration_s, start_offset_s (its iteration start after rank 0's),
// busy_s {stream: s}, collective_wait_s, collective_transfer_s. The reports must come from one
// plan (same op count) and carry meta.steady_start_ns.
nlohmann::json rank_breakdown(const std::vector<traces::Report>& reports);

}  // namespace protwin::cli
