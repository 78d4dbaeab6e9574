#include "traces/host_dispatch_import.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <vector>

#include "traces/kineto_import.h"
#include "traces/op_profile.h"

namespace protwin::traces {

namespace {

struct Span {
  double ts, dur;
  const nlohmann::json* e;
  double end() const { return ts + dur; }
};

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

HostCostSample sample_of(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return {n, median(std::move(v))};
}

}  // namespace

std::map<std::string, HostCostSample> host_dispatch_costs(const JsonNode& root) {
  const nlohmann::json& evs = root.is_array() ? root.raw() : root.at("traceEvents").raw();
  // Correlation ids that reached a GPU kernel (the cuda_runtime -> kernel link of the ac2g flows).
  std::set<int64_t> kernel_ids;
  for (const auto& e : evs) {
    if (e.is_object() && event_string(e, "cat") == "kernel" && e.contains("args") && e["args"].is_object())
      kernel_ids.insert(static_cast<int64_t>(event_number(e["args"], "correlation")));
  }
  std::unordered_map<std::string, std::vector<Span>> ops, launches;
  std::vector<double> launch_us, copy_us;
  for (const auto& e : evs) {
    if (!e.is_object() || event_string(e, "ph") != "X") continue;
    const std::string cat = event_string(e, "cat"), name = event_string(e, "name");
    const Span s{event_number(e, "ts"), event_number(e, "dur"), &e};
    if (cat == "cpu_op") {
      ops[event_thread(e)].push_back(s);
    } else if (cat == "cuda_runtime" && starts_with(name, "cudaLaunchKernel")) {
      const bool reaches = e.contains("args") && e["args"].is_object() &&
                           kernel_ids.count(static_cast<int64_t>(event_number(e["args"], "correlation")));
      if (!reaches) continue;
      launch_us.push_back(s.dur);
      launches[event_thread(e)].push_back(s);
    } else if (cat == "cuda_runtime" && name == "cudaMemcpyAsync") {
      copy_us.push_back(s.dur);
    }
  }
  std::vector<double> autograd_us, plain_us, backward_us, collective_us;
  for (auto& [thread, list] : ops) {
    // Outermost ops: sorted by start, longest first at equal start; an op inside the last
    // outermost one is nested.
    std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    std::vector<Span>& ls = launches[thread];
    std::sort(ls.begin(), ls.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
    double outer_end = -1e300;
    for (const Span& op : list) {
      if (op.ts < outer_end) continue;
      outer_end = op.end();
      const std::string name = event_string(*op.e, "name");
      if (starts_with(name, "c10d::")) collective_us.push_back(op.dur);
      auto first = std::lower_bound(ls.begin(), ls.end(), op.ts, [](const Span& s, double t) { return s.ts < t; });
      int inside = 0;
      double launch = 0;
      for (auto it = first; it != ls.end() && it->ts <= op.end(); ++it) {
        if (it->end() <= op.end()) {
          ++inside;
          launch = it->dur;
        }
      }
      if (inside != 1) continue;
      const double own = std::max(0.0, op.dur - launch);
      const nlohmann::json& args = op.e->contains("args") ? (*op.e)["args"] : nlohmann::json::object();
      if (starts_with(name, "autograd::engine::evaluate_function")) {
        backward_us.push_back(own);
      } else if (args.is_object() && args.contains("Sequence number")) {
        autograd_us.push_back(own);
      } else {
        plain_us.push_back(own);
      }
    }
  }
  std::map<std::string, HostCostSample> out;
  auto put = [&](const char* key, const std::vector<double>& v) {
    if (!v.empty()) out[key] = sample_of(v);
  };
  put("kernel_launch_us", launch_us);
  put("copy_call_us", copy_us);
  put("eager_op_autograd_us", autograd_us);
  put("eager_op_us", plain_us);
  put("backward_op_us", backward_us);
  put("collective_call_us", collective_us);
  return out;
}

nlohmann::json host_dispatch_fragment(const std::map<std::string, HostCostSample>& costs, const std::string& source) {
  static const std::map<std::string, std::string> kWhat = {
      {"kernel_launch_us", "cudaLaunchKernel calls that reached a kernel"},
      {"copy_call_us", "cudaMemcpyAsync calls"},
      {"eager_op_autograd_us", "outermost autograd-recorded cpu_ops launching one kernel, minus the launch"},
      {"eager_op_us", "outermost cpu_ops without autograd recording launching one kernel, minus the launch"},
      {"backward_op_us", "autograd engine nodes launching one kernel, minus the launch"},
      {"collective_call_us", "outermost c10d:: cpu_ops"}};
  nlohmann::json j = {{"host_dispatch", nlohmann::json::object()}, {"provenance", nlohmann::json::object()}};
  for (const auto& [key, s] : costs) {
    j["host_dispatch"][key] = s.median_us;
    j["provenance"]["/host_dispatch/" + key] = {
        {"kind", "measured"},
        {"source", source},
        {"note", "median of " + std::to_string(s.count) + " " + kWhat.at(key) + " (protwin import-kineto "
                 "--host-dispatch; pytorch/pytorch#41383)"}};
  }
  return j;
}

}  // namespace protwin::traces
