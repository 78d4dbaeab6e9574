// The human and JSON summaries of a Report that several subcommands print.
#pragma once

#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "traces/report.h"

namespace protwin::cli {

// {"iteration_s", "streams": [{"name", "busy_s", "utilization", "ops"}],
//  "pools": [{"name", "peak_bytes", "capacity_bytes", "peak_at_s"}], "priced_by": {source: ops}}
nlohmann::json report_summary_json(const traces::Report& report);
void print_report_summary(std::ostream& os, const traces::Report& report);
// "ops priced by: curve 120, profile 40" (Report::priced_by), with a newline.
std::string priced_by_line(const std::map<std::string, int64_t>& priced_by);
// "curve 120, profile 40": each key and its count, in the map's order ("" for none).
std::string counts_text(const std::map<std::string, int64_t>& counts);

}  // namespace protwin::cli
