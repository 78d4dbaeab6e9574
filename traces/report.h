// Report: what happened when a Plan ran (DESIGN §1). The simulator and the runtime write the same
// schema, so the two can be compared op by op.
//
// JSON: {"format": "protwin.report", "version": 1, "meta": {...}, "iteration_ns": T,
//        "ops": [{"id", "kind", "stream", "start_ns", "end_ns", "launch_ns"?: [start, end]}],
//        "streams": [{"name", "busy_ns", "ops"}], "hosts"?: [{"name", "busy_ns", "ops"}],
//        "pools": [{"name", "capacity_bytes", "peak_bytes", "peak_at_ns", "curve": [[t_ns, bytes], ...]}]}
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/units.h"

namespace protwin::traces {

inline constexpr const char* kReportFormat = "protwin.report";
inline constexpr int kReportVersion = 1;

struct OpRecord {
  int id = 0;
  std::string kind;
  std::string stream;
  SimTime start;
  SimTime end;
  // When a host thread issued the op (host dispatch, DESIGN §4): its launch interval.
  std::optional<std::pair<SimTime, SimTime>> launch = std::nullopt;
};

struct StreamRecord {
  std::string name;
  SimTime busy;       // sum of op durations on the stream
  int64_t ops = 0;
};

struct PoolRecord {
  std::string name;
  Bytes capacity;
  Bytes peak;
  SimTime peak_at;
  // Step curve: (time, bytes after every change at that time). The first point is (0, initial).
  std::vector<std::pair<SimTime, Bytes>> curve;
};

struct Report {
  nlohmann::json meta = nlohmann::json::object();  // source ("sim" | "runtime"), plan meta, ...
  SimTime iteration;                               // end of the last op
  std::vector<OpRecord> ops;                       // indexed by op id
  std::vector<StreamRecord> streams;
  std::vector<StreamRecord> hosts;                 // host-dispatch threads (busy = launch time); empty: off
  std::vector<PoolRecord> pools;
  // Simulated ops per cost source ("profile", "curve", "model", "measured", ...; ops that cost
  // nothing are not counted). Kept in memory for the subcommands' summaries, not written to the file.
  std::map<std::string, int64_t> priced_by;

  const StreamRecord* stream(const std::string& name) const;
  const PoolRecord* pool(const std::string& name) const;
};

// The host-dispatch thread that issues a stream's ops: one per rank, named by the stream's prefix
// before its last '.' ("compute" -> "host", "stage1.compute" -> "stage1.host").
std::string host_of_stream(const std::string& stream);

Report report_from_json(const nlohmann::json& j, const std::string& source);
Report read_report(const std::string& path);
nlohmann::json report_to_json(const Report& report);
// Deterministic text: the same Report gives byte-identical output.
std::string report_to_string(const Report& report);
void write_report(const Report& report, const std::string& path);  // atomic, streamed (op by op)
// Visits op records in order (a Report's ops, a RecordSpool's).
using OpRecordVisitor = std::function<void(const std::function<void(const OpRecord&)>&)>;
OpRecordVisitor visit_ops(const Report& report);  // its ops (the report must outlive the visitor)
// The same file as write_report(report) would write for `report` with the records `ops` visits as
// its ops (report.ops is not read): a run's report from records kept outside memory.
void write_report(const Report& report, const OpRecordVisitor& ops, const std::string& path);

}  // namespace protwin::traces
