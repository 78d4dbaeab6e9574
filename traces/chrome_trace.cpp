#include "traces/chrome_trace.h"

#include <map>

#include "traces/file_io.h"
#include "traces/json_splice.h"

namespace protwin::traces {

namespace {
// Chrome traces count in microseconds; keep nanosecond precision as a fraction.
double us(SimTime t) { return static_cast<double>(t.ns) / 1000.0; }

// Calls emit(event) for every trace event, in order: the metadata, the ops (`ops` visits them, twice),
// the pool counters.
template <class Emit>
void trace_events(const Report& report, const OpRecordVisitor& ops, Emit&& emit) {
  using nlohmann::json;
  constexpr int kPid = 1;
  const std::string process =
      report.meta.value("source", std::string("protwin")) == "runtime" ? "measured" : "simulated";
  emit({{"ph", "M"}, {"name", "process_name"}, {"pid", kPid}, {"args", {{"name", "protwin " + process}}}});
  // One track (tid) per stream, in the Report's stream order, then one per host-dispatch thread
  // (one per rank): the launches.
  std::map<std::string, int> tid, host_tid;
  int tracks = 0;
  auto track = [&](std::map<std::string, int>& ids, const std::string& name) {
    const int t = ++tracks;
    ids[name] = t;
    emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPid}, {"tid", t}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kPid}, {"tid", t}, {"args", {{"sort_index", t}}}});
  };
  for (const auto& s : report.streams) track(tid, s.name);
  for (const auto& h : report.hosts) track(host_tid, h.name);
  ops([&](const OpRecord& op) {
    auto it = tid.find(op.stream);
    const int t = it == tid.end() ? 0 : it->second;
    emit({{"ph", "X"}, {"name", op.kind}, {"cat", op.stream}, {"pid", kPid}, {"tid", t}, {"ts", us(op.start)},
          {"dur", us(op.end - op.start)}, {"args", {{"op", op.id}}}});
  });
  ops([&](const OpRecord& op) {
    if (!op.launch) return;
    auto it = host_tid.find(host_of_stream(op.stream));
    emit({{"ph", "X"}, {"name", "launch " + op.kind}, {"cat", "host"}, {"pid", kPid},
          {"tid", it == host_tid.end() ? 0 : it->second}, {"ts", us(op.launch->first)},
          {"dur", us(op.launch->second - op.launch->first)}, {"args", {{"op", op.id}}}});
  });
  // One counter track per memory pool (bytes over time).
  for (const auto& pool : report.pools) {
    for (const auto& [t, b] : pool.curve)
      emit({{"ph", "C"}, {"name", "pool " + pool.name}, {"pid", kPid}, {"ts", us(t)}, {"args", {{"bytes", b.n}}}});
  }
}

// The trace without its events ("traceEvents": []).
nlohmann::json trace_frame(const Report& report) {
  return {{"traceEvents", nlohmann::json::array()}, {"displayTimeUnit", "ns"},
          {"otherData", {{"generator", "protwin"}, {"iteration_ns", report.iteration.ns}}}};
}

}  // namespace

nlohmann::json chrome_trace(const Report& report) {
  nlohmann::json j = trace_frame(report);
  trace_events(report, visit_ops(report), [&](nlohmann::json&& e) { j["traceEvents"].push_back(std::move(e)); });
  return j;
}

void write_chrome_trace(const Report& report, const std::string& path) {
  write_chrome_trace(report, visit_ops(report), path);
}

// Streamed: the frame's text with the events written one by one where its empty list was (the
// same bytes as chrome_trace(report).dump()), so a trace of millions of ops is never one JSON
// document in memory.
void write_chrome_trace(const Report& report, const OpRecordVisitor& ops, const std::string& path) {
  AtomicFileWriter out(path);
  ArraySplicer splice(out, trace_frame(report), "traceEvents", -1);
  trace_events(report, ops, [&](nlohmann::json&& e) { splice.add(e); });
  splice.finish();
  out.commit();
}

}  // namespace protwin::traces
