#include "traces/chrome_trace.h"

#include <map>

#include "traces/file_io.h"

namespace protwin::traces {

namespace {
// Chrome traces count in microseconds; keep nanosecond precision as a fraction.
double us(SimTime t) { return static_cast<double>(t.ns) / 1000.0; }
}  // namespace

nlohmann::json chrome_trace(const Report& report) {
  using nlohmann::json;
  json events = json::array();
  constexpr int kPid = 1;
  const std::string process =
      report.meta.value("source", std::string("protwin")) == "runtime" ? "measured" : "simulated";
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kPid},
                    {"args", {{"name", "protwin " + process}}}});
  // One track (tid) per stream, in the Report's stream order.
  std::map<std::string, int> tid;
  for (size_t i = 0; i < report.streams.size(); ++i) {
    const int t = static_cast<int>(i) + 1;
    tid[report.streams[i].name] = t;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPid}, {"tid", t},
                      {"args", {{"name", report.streams[i].name}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kPid}, {"tid", t},
                      {"args", {{"sort_index", t}}}});
  }
  for (const auto& op : report.ops) {
    auto it = tid.find(op.stream);
    const int t = it == tid.end() ? 0 : it->second;
    events.push_back({{"ph", "X"}, {"name", op.kind}, {"cat", op.stream}, {"pid", kPid}, {"tid", t},
                      {"ts", us(op.start)}, {"dur", us(op.end - op.start)},
                      {"args", {{"op", op.id}}}});
  }
  // One counter track per memory pool (bytes over time).
  for (const auto& pool : report.pools) {
    for (const auto& [t, b] : pool.curve)
      events.push_back({{"ph", "C"}, {"name", "pool " + pool.name}, {"pid", kPid}, {"ts", us(t)},
                        {"args", {{"bytes", b.n}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"},
          {"otherData", {{"generator", "protwin"}, {"iteration_ns", report.iteration.ns}}}};
}

void write_chrome_trace(const Report& report, const std::string& path) {
  write_file_atomic(path, chrome_trace(report).dump() + "\n");
}

}  // namespace protwin::traces
