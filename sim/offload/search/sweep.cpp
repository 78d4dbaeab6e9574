#include "sim/offload/search/sweep.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

#include <boost/algorithm/string/join.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "hwmodels/machine_edit.h"
#include "sim/distributed/evaluate_points.h"
#include "sim/offload/compiler/systems.h"
#include "traces/error.h"

namespace protwin::sim::offload {

namespace {

bool is_value(const std::string& v) {
  if (v == "true" || v == "false") return true;
  char* end = nullptr;
  errno = 0;
  std::strtod(v.c_str(), &end);
  return !v.empty() && *end == '\0' && errno == 0;
}

using boost::algorithm::join;

// "host.cores" -> "/host/cores" (keys hold neither '/' nor '~'; apply_override walked them).
nlohmann::json::json_pointer pointer_of(const std::string& path) {
  std::string p;
  for (const std::string& t : hw::pieces(path, '.')) p += "/" + t;
  return nlohmann::json::json_pointer(p);
}

// The machine with `overrides` applied and validated; a refusal names the --set values.
hw::Machine apply_all(const nlohmann::json& base, const std::string& source, const std::vector<std::string>& overrides,
                      nlohmann::json* doc_out = nullptr) {
  nlohmann::json doc = base;
  for (const auto& o : overrides) hw::apply_override(doc, o);  // errors already start with "--set"
  try {
    hw::Machine m = hw::machine_from_json(doc, source);
    if (doc_out) *doc_out = std::move(doc);
    return m;
  } catch (const Error& e) {
    throw Error("--set " + join(overrides, " --set ") + ": the machine is invalid with this value: " + e.what());
  }
}

}  // namespace

// A point as it crosses MPI ranks: every field the table, the JSON and the CSV read.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SweepPoint, index, overrides, set, search, chunks, stream_busy_s)

std::string SweepAxis::name() const { return join(keys, "+"); }

SweepAxis parse_sweep_axis(const std::string& arg) {
  const size_t eq = arg.find('=');
  PROTWIN_CHECK(eq != std::string::npos && eq > 0, "--set ", arg,
                ": expected key=v1,v2,... (or key1+key2=v1,v2,... for linked keys), e.g. host.cores=12,24,48");
  SweepAxis a;
  const std::string lhs = arg.substr(0, eq), rhs = arg.substr(eq + 1);
  a.keys = hw::pieces(lhs, '+');
  std::set<std::string> seen;
  for (const auto& k : a.keys) {
    PROTWIN_CHECK(!k.empty(), "--set ", lhs, ": empty key; link keys as key1+key2");
    PROTWIN_CHECK(seen.insert(k).second, "--set ", lhs, ": key ", k, " is linked twice");
  }
  PROTWIN_CHECK(!rhs.empty(), "--set ", lhs, ": empty list of values; expected v1,v2,... after '='");
  for (const std::string& item : hw::pieces(rhs, ',')) {
    PROTWIN_CHECK(!item.empty(), "--set ", lhs, "=", rhs, ": empty value in the list; expected v1,v2,...");
    std::vector<std::string> parts = hw::pieces(item, ':');
    PROTWIN_CHECK(parts.size() == 1 || parts.size() == a.keys.size(), "--set ", lhs, ": value '", item, "' has ",
                  parts.size(), " parts; expected one value for every key, or ", a.keys.size(),
                  " separated by ':' (one per key, in key order)");
    for (const auto& p : parts)
      PROTWIN_CHECK(is_value(p), "--set ", lhs, ": expected a number (or true/false), got '", p, "'");
    if (parts.size() == 1) parts.assign(a.keys.size(), parts.front());
    a.labels.push_back(item);
    a.values.push_back(std::move(parts));
  }
  return a;
}

int64_t sweep_points(const std::vector<SweepAxis>& axes, size_t systems) {
  int64_t n = static_cast<int64_t>(systems);
  for (const auto& a : axes) {
    const int64_t k = static_cast<int64_t>(a.values.size());
    if (k != 0 && n > std::numeric_limits<int64_t>::max() / k) return std::numeric_limits<int64_t>::max();
    n *= k;
  }
  return n;
}

SweepResult run_sweep(const ModelSpec& model, const nlohmann::json& machine_json, const std::string& source,
                      const SweepOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  PROTWIN_CHECK(!o.systems.empty(), "--system: no system to sweep");
  for (const auto& s : o.systems) find_system(s);
  std::set<std::string> keys;
  for (const auto& a : o.axes) {
    PROTWIN_CHECK(!a.values.empty(), "--set ", a.name(), ": empty list of values");
    for (const auto& k : a.keys)
      PROTWIN_CHECK(keys.insert(k).second, "--set ", k, ": the key is on two --set axes; give each field once");
  }
  const int64_t total = sweep_points(o.axes, o.systems.size());
  if (total > kMaxSweepPoints) {
    std::ostringstream dims;
    for (const auto& a : o.axes) dims << a.values.size() << " x ";
    PROTWIN_CHECK(false, "--set: the grid has ", total, " points (", dims.str(), o.systems.size(),
                  " system(s)), more than the ", kMaxSweepPoints, " allowed; sweep fewer values");
  }
  SweepResult r;
  r.model = model.name;
  r.machine = machine_json.value("name", source);
  r.gpus = o.search.gpus;
  r.nodes = o.search.nodes;
  r.seq = o.search.seq > 0 ? o.search.seq : model.default_seq;
  r.axes = o.axes;
  // Every value on its own first, so a typo fails in milliseconds, not after half the sweep.
  for (const auto& a : o.axes) {
    r.axis_values.emplace_back();
    for (const auto& vals : a.values) {
      std::vector<std::string> ov;
      for (size_t k = 0; k < a.keys.size(); ++k) ov.push_back(a.keys[k] + "=" + vals[k]);
      nlohmann::json doc;
      apply_all(machine_json, source, ov, &doc);
      nlohmann::json typed = nlohmann::json::array();
      for (const auto& k : a.keys) typed.push_back(doc.at(pointer_of(k)));
      r.axis_values.back().push_back(a.keys.size() == 1 ? typed.front() : typed);
    }
  }
  // The grid's indices, first axis slowest (the order of the points: systems fastest).
  std::vector<std::vector<size_t>> grid;
  for (std::vector<size_t> idx(o.axes.size(), 0);;) {
    grid.push_back(idx);
    size_t i = o.axes.size();
    while (i > 0 && ++idx[i - 1] == o.axes[i - 1].values.size()) idx[--i] = 0;
    if (i == 0) break;
  }
  const size_t systems = o.systems.size();
  const std::function<SweepPoint(size_t)> search_point = [&](size_t n) {
    SweepPoint p;
    p.index = grid[n / systems];
    for (size_t i = 0; i < o.axes.size(); ++i)
      for (size_t k = 0; k < o.axes[i].keys.size(); ++k)
        p.overrides.push_back(o.axes[i].keys[k] + "=" + o.axes[i].values[p.index[i]][k]);
    nlohmann::json doc;
    const auto cost = hw::make_cost_model(apply_all(machine_json, source, p.overrides, &doc), o.profile);
    if (o.profile) cost->set_contention(hw::contention_rules_from_profile(o.profile->provenance()));
    p.set = nlohmann::json::object();
    for (const auto& a : o.axes)
      for (const auto& k : a.keys) p.set[k] = doc.at(pointer_of(k));
    SearchOptions so = o.search;
    so.system = o.systems[n % systems];
    so.progress = nullptr;
    p.search = search_policy(model, *cost, so);
    p.chunks = static_cast<int64_t>(p.search.best_plan.chunks->chunks.size());
    if (p.search.found)
      for (const auto& st : p.search.best_report.streams) p.stream_busy_s[st.name] = st.busy.seconds();
    p.search.best_plan = {};  // a sweep keeps every point: only the outcome
    p.search.best_report = {};
    p.search.pareto.clear();
    return p;
  };
  // One point at a time on each rank (a search runs its own threads); a failing point fails the
  // sweep, as it would in one process.
  for (const auto& outcome : evaluate_points(grid.size() * systems, 1, search_point, o.progress))
    r.points.push_back(outcome.get());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

nlohmann::json sweep_to_json(const SweepResult& r) {
  nlohmann::json axes = nlohmann::json::array();
  for (size_t i = 0; i < r.axes.size(); ++i)
    axes.push_back({{"key", r.axes[i].name()}, {"keys", r.axes[i].keys}, {"values", r.axis_values.at(i)},
                    {"labels", r.axes[i].labels}});
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    const SearchResult& s = p.search;
    nlohmann::json j = {{"set", p.set}, {"index", p.index}, {"system", s.system}};
    const Candidate& b = s.best;
    nlohmann::json best = {{"tokens_per_s", b.tokens_per_s}, {"iteration_s", b.iteration_s},
        {"analytic_iteration_s", b.analytic_s}, {"forward_s", b.forward_s}, {"backward_s", b.backward_s},
        {"exposed_optimizer_s", b.exposed_optimizer_s}, {"batch", b.batch}, {"knobs", b.knobs.to_json()},
        {"chunks", p.chunks}, {"peak_gpu_bytes", b.peak_gpu_bytes},
        {"analytic_peak_gpu_bytes", b.analytic_peak_gpu_bytes}, {"peak_pinned_bytes", b.peak_pinned_bytes},
        {"peak_pageable_bytes", b.peak_pageable_bytes}, {"stream_busy_s", p.stream_busy_s},
        {"priced_by", b.priced_by}};
    if (!s.found)  // the same keys, null
      for (auto& v : best) v = nullptr;
    j.update(best);
    if (!s.found) {
      j["smallest_peak_gpu_bytes"] = s.smallest_peak_gpu_bytes;
      j["smallest_host_bytes"] = s.smallest_host_bytes;
    }
    j.update({{"configurations", s.configurations}, {"simulated", s.simulated}, {"search_s", s.seconds}});
    points.push_back(std::move(j));
  }
  return {{"format", "protwin.sweep"}, {"version", 1}, {"model", r.model}, {"machine", r.machine},
          {"gpus", r.gpus}, {"nodes", r.nodes}, {"seq", r.seq}, {"axes", axes}, {"points", points}, {"sweep_s", r.seconds}};
}

std::string sweep_to_csv(const SweepResult& r) {
  std::set<std::string> streams;
  for (const auto& p : r.points)
    for (const auto& kv : p.stream_busy_s) streams.insert(kv.first);
  std::vector<std::string> head;
  for (const auto& a : r.axes) head.insert(head.end(), a.keys.begin(), a.keys.end());
  for (const char* c : {"system", "tokens_per_s", "iteration_s", "forward_s", "backward_s", "exposed_optimizer_s",
                        "batch", "chunk_bytes", "n_persist", "n_buffer", "n_swap", "n_checkpoint", "peak_gpu_bytes",
                        "peak_pinned_bytes", "peak_pageable_bytes"})
    head.push_back(c);
  for (const auto& s : streams) head.push_back("busy_" + s + "_s");
  head.push_back("search_s");
  std::string out = join(head, ",") + "\n";
  // Numbers as JSON writes them (shortest round trip), so the CSV and the JSON agree exactly.
  auto num = [](const nlohmann::json& v) { return v.dump(); };
  for (const auto& p : r.points) {
    std::vector<std::string> row;
    for (const auto& a : r.axes)
      for (const auto& k : a.keys) row.push_back(num(p.set.at(k)));
    row.push_back(p.search.system);
    const Candidate& b = p.search.best;
    const std::vector<nlohmann::json> res = {b.tokens_per_s, b.iteration_s, b.forward_s, b.backward_s,
                                             b.exposed_optimizer_s, b.batch, b.knobs.chunk_bytes,
                                             b.knobs.n_persist, b.knobs.n_buffer, b.knobs.n_swap,
                                             b.knobs.n_checkpoint, b.peak_gpu_bytes, b.peak_pinned_bytes,
                                             b.peak_pageable_bytes};
    for (const auto& v : res) row.push_back(p.search.found ? num(v) : "");
    for (const auto& s : streams) {
      const auto it = p.stream_busy_s.find(s);
      row.push_back(it == p.stream_busy_s.end() ? "" : num(it->second));
    }
    row.push_back(num(p.search.seconds));
    out += join(row, ",") + "\n";
  }
  return out;
}

}  // namespace protwin::sim::offload
