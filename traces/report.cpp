#include "traces/report.h"

#include "traces/json_splice.h"

#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/json_reader.h"

namespace protwin::traces {

const StreamRecord* Report::stream(const std::string& name) const {
  for (const auto& s : streams)
    if (s.name == name) return &s;
  return nullptr;
}

const PoolRecord* Report::pool(const std::string& name) const {
  for (const auto& p : pools)
    if (p.name == name) return &p;
  return nullptr;
}

Report report_from_json(const nlohmann::json& j, const std::string& source) {
  auto file = std::make_shared<const std::string>(source);
  JsonNode root(&j, file, "");
  if (!j.is_object()) root.fail("expected a protwin.report object");
  root.check_format(kReportFormat, kReportVersion, "report");
  Report r;
  if (auto meta = root.find("meta")) r.meta = meta->raw();
  r.iteration = SimTime(root.get_nonneg_int("iteration_ns"));
  JsonNode ops = root.at("ops");
  r.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    JsonNode o = ops.at(i);
    OpRecord rec;
    rec.id = static_cast<int>(o.get_int("id"));
    rec.kind = o.get_string("kind", "");
    rec.stream = o.get_string("stream", "");
    rec.start = SimTime(o.get_nonneg_int("start_ns"));
    rec.end = SimTime(o.get_nonneg_int("end_ns"));
    if (rec.end < rec.start) o.at("end_ns").fail("op ends before it starts");
    if (auto l = o.find("launch_ns")) {
      if (l->size() != 2) l->fail("expected [start_ns, end_ns]");
      const int64_t a = l->at(size_t{0}).as_int(), b = l->at(size_t{1}).as_int();
      if (a < 0 || b < a || b > rec.start.ns) l->fail("launch must be a non-negative interval ending by the op's start");
      rec.launch = std::make_pair(SimTime(a), SimTime(b));
    }
    r.ops.push_back(std::move(rec));
  }
  // The streams' and the host threads' busy times: [{"name", "busy_ns", "ops"}].
  auto read_busy = [](const JsonNode& list, std::vector<StreamRecord>& out) {
    for (size_t i = 0; i < list.size(); ++i) {
      const JsonNode s = list.at(i);
      out.push_back({s.get_string("name"), SimTime(s.get_nonneg_int("busy_ns")), s.get_nonneg_int("ops", 0)});
    }
  };
  read_busy(root.at("streams"), r.streams);
  if (auto hosts = root.find("hosts")) read_busy(*hosts, r.hosts);
  JsonNode pools = root.at("pools");
  for (size_t i = 0; i < pools.size(); ++i) {
    JsonNode p = pools.at(i);
    PoolRecord rec;
    rec.name = p.get_string("name");
    rec.capacity = Bytes(p.get_nonneg_int("capacity_bytes"));
    rec.peak = Bytes(p.get_nonneg_int("peak_bytes"));
    rec.peak_at = SimTime(p.get_nonneg_int("peak_at_ns", 0));
    if (auto curve = p.find("curve")) {
      for (size_t k = 0; k < curve->size(); ++k) {
        JsonNode pt = curve->at(k);
        if (pt.size() != 2) pt.fail("expected [t_ns, bytes]");
        rec.curve.emplace_back(SimTime(pt.at(size_t{0}).as_int()), Bytes(pt.at(size_t{1}).as_int()));
      }
    }
    r.pools.push_back(std::move(rec));
  }
  return r;
}

std::string host_of_stream(const std::string& stream) {
  const size_t dot = stream.rfind('.');
  return dot == std::string::npos ? "host" : stream.substr(0, dot + 1) + "host";
}

Report read_report(const std::string& path) {
  JsonDocument doc = JsonDocument::load(path);
  return report_from_json(doc.json(), path);
}

namespace {

nlohmann::json op_record_to_json(const OpRecord& o) {
  nlohmann::json j = {{"id", o.id}, {"kind", o.kind}, {"stream", o.stream}, {"start_ns", o.start.ns},
                      {"end_ns", o.end.ns}};
  if (o.launch) j["launch_ns"] = {o.launch->first.ns, o.launch->second.ns};
  return j;
}

// The report without its ops ("ops": []).
nlohmann::json report_frame(const Report& r) {
  using nlohmann::json;
  auto busy = [](const std::vector<StreamRecord>& list) {
    json out = json::array();
    for (const auto& s : list) out.push_back({{"name", s.name}, {"busy_ns", s.busy.ns}, {"ops", s.ops}});
    return out;
  };
  json pools = json::array();
  for (const auto& p : r.pools) {
    json curve = json::array();
    for (const auto& [t, b] : p.curve) curve.push_back({t.ns, b.n});
    pools.push_back({{"name", p.name}, {"capacity_bytes", p.capacity.n}, {"peak_bytes", p.peak.n},
                     {"peak_at_ns", p.peak_at.ns}, {"curve", curve}});
  }
  json j = {{"format", kReportFormat}, {"version", kReportVersion}, {"meta", r.meta},
            {"iteration_ns", r.iteration.ns}, {"ops", json::array()}, {"streams", busy(r.streams)},
            {"pools", pools}};
  if (!r.hosts.empty()) j["hosts"] = busy(r.hosts);
  return j;
}

}  // namespace

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json j = report_frame(r);
  for (const auto& o : r.ops) j["ops"].push_back(op_record_to_json(o));
  return j;
}

std::string report_to_string(const Report& r) { return report_to_json(r).dump(1) + "\n"; }

OpRecordVisitor visit_ops(const Report& r) {
  return [&r](const std::function<void(const OpRecord&)>& f) {
    for (const auto& o : r.ops) f(o);
  };
}

void write_report(const Report& r, const std::string& path) { write_report(r, visit_ops(r), path); }

void write_report(const Report& r, const OpRecordVisitor& ops, const std::string& path) {
  AtomicFileWriter out(path);
  ArraySplicer splice(out, report_frame(r), "ops", 1);
  ops([&](const OpRecord& o) { splice.add(op_record_to_json(o)); });
  splice.finish();
  out.commit();
}

}  // namespace protwin::traces
