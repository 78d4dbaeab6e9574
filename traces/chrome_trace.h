// Chrome trace export of a Report: one track per stream, one counter track per memory pool.
// Opens in Perfetto (ui.perfetto.dev) and chrome://tracing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "traces/report.h"

namespace protwin::traces {

nlohmann::json chrome_trace(const Report& report);
void write_chrome_trace(const Report& report, const std::string& path);  // atomic, streamed (event by event)
// The same file for `report` with the records `ops` visits as its ops (report.ops is not read).
void write_chrome_trace(const Report& report, const OpRecordVisitor& ops, const std::string& path);

}  // namespace protwin::traces
