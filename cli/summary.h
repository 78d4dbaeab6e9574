// The human and JSON summaries of a Report that several subcommands print.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "traces/report.h"

namespace protwin::cli {

// {"iteration_s", "streams": [{"name", "busy_s", "utilization", "ops"}],
//  "pools": [{"name", "peak_bytes", "capacity_bytes", "peak_at_s"}]}
nlohmann::json report_summary_json(const traces::Report& report);
void print_report_summary(std::ostream& os, const traces::Report& report);

}  // namespace protwin::cli
