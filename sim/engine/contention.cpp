#include "sim/engine/contention.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "sim/engine/plan_simulator.h"

namespace protwin::sim {

namespace {

using Interval = std::pair<int64_t, int64_t>;

// Sorted, disjoint union of the intervals.
std::vector<Interval> union_of(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v)
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  return out;
}

// Length of [a, b) covered by the union.
int64_t covered(const std::vector<Interval>& u, int64_t a, int64_t b) {
  auto it = std::upper_bound(u.begin(), u.end(), Interval{a, INT64_MAX});
  if (it != u.begin()) --it;
  int64_t c = 0;
  for (; it != u.end() && it->first < b; ++it) c += std::max<int64_t>(0, std::min(b, it->second) - std::max(a, it->first));
  return c;
}

// What the rules see of a pass: the intervals of each rule's `beside` streams as the records come
// (note), which become, once the pass ends, what a slowed op's scale is read against: 1 + sum over
// its stream's rules of (slowdown - 1) x (share of the op's time those streams covered).
class Overlap {
 public:
  explicit Overlap(const std::vector<ContentionRule>& rules) : rules_(rules), seen_(rules.size()), ended_(rules.size()) {
    for (size_t i = 0; i < rules.size(); ++i) {
      slowed_[rules[i].stream].push_back(i);
      for (const auto& b : rules[i].beside) beside_[b].push_back(i);
    }
  }
  void note(const traces::OpRecord& op) {
    if (op.end.ns <= op.start.ns) return;
    if (auto b = beside_.find(op.stream); b != beside_.end())
      for (size_t i : b->second) seen_[i].emplace_back(op.start.ns, op.end.ns);
  }
  // The pass's intervals are now the ones scales are read against; false when there are none.
  bool end_pass() {
    bool any = false;
    for (size_t i = 0; i < rules_.size(); ++i) {
      ended_[i] = union_of(std::move(seen_[i]));
      seen_[i].clear();
      any = any || !ended_[i].empty();
    }
    return any;
  }
  bool slows(const std::string& stream) const { return slowed_.count(stream) > 0; }
  // The scale of an op of a slowed stream that ran [start, end), end > start.
  double scale(const traces::OpRecord& op) const {
    double s = 1;
    for (size_t i : slowed_.at(op.stream))
      s += (rules_[i].slowdown - 1) * static_cast<double>(covered(ended_[i], op.start.ns, op.end.ns)) /
           static_cast<double>(op.end.ns - op.start.ns);
    return s;
  }

 private:
  const std::vector<ContentionRule>& rules_;
  std::map<std::string, std::vector<size_t>> slowed_, beside_;  // stream -> rules
  std::vector<std::vector<Interval>> seen_, ended_;             // per rule
};

// The base cost model with each op's time on its stream scaled.
class ScaledCostModel : public hw::CostModel {
 public:
  using Scale = std::function<double(int id)>;
  ScaledCostModel(const hw::CostModel& base, Scale scale) : base_(base), scale_(std::move(scale)) {}
  ScaledCostModel(const hw::CostModel& base, const std::vector<double>& scale)
      : ScaledCostModel(base, [&scale](int id) { return static_cast<size_t>(id) < scale.size() ? scale[id] : 1.0; }) {}
  ScaledCostModel(const hw::CostModel& base, const std::unordered_map<int, double>& scale)
      : ScaledCostModel(base, [&scale](int id) {
          auto it = scale.find(id);
          return it == scale.end() ? 1.0 : it->second;
        }) {}
  std::vector<hw::LinkSpec> links() const override { return base_.links(); }
  int launch_queue_depth() const override { return base_.launch_queue_depth(); }
  hw::OpCost cost(const traces::Op& op, const traces::Plan& plan) const override {
    hw::OpCost c = base_.cost(op, plan);
    c.scale_stream_time(scale_(op.id));
    return c;
  }

 private:
  const hw::CostModel& base_;
  Scale scale_;
};

}  // namespace

std::vector<ContentionRule> contention_rules_from_profile(const nlohmann::json& provenance) {
  std::vector<ContentionRule> rules;
  if (!provenance.is_object() || !provenance.contains("contention")) return rules;
  const auto& c = provenance["contention"];
  auto add = [&](const char* key, const char* stream, std::vector<std::string> beside) {
    if (c.contains(key) && c[key].is_number()) rules.push_back({stream, std::move(beside), c[key].get<double>()});
  };
  add("compute_slowdown_with_copies", "compute", {"h2d", "d2h"});
  add("compute_slowdown_with_adam", "compute", {"cpu_optim"});
  add("adam_slowdown_with_compute", "cpu_optim", {"compute"});
  add("compute_slowdown_with_collectives", "compute", {"collective"});  // N-rank profiles only
  // copy_slowdown_with_compute is not used: a copy's time is its link transfer, which the link
  // model shares; only its latency is a fixed time.
  return rules;
}

traces::Report simulate_with_contention(const traces::Plan& plan, const hw::CostModel& cost,
                                        const std::vector<ContentionRule>& rules, int passes) {
  traces::Report r = PlanSimulator(cost).run(plan);
  if (rules.empty()) return r;
  // Each pass's scales are read against the same pass's intervals (the streamed form below reads
  // them against the pass before, to hold only the beside streams' intervals).
  std::vector<double> scale(plan.ops.size(), 1.0);
  Overlap overlap(rules);
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& op : r.ops) overlap.note(op);
    overlap.end_pass();
    for (const auto& op : r.ops)
      if (overlap.slows(op.stream)) scale[static_cast<size_t>(op.id)] = op.end.ns > op.start.ns ? overlap.scale(op) : 1;
    r = PlanSimulator(ScaledCostModel(cost, scale)).run(plan);
  }
  return r;
}

traces::Report simulate_with_contention(const ContentionRun& run, const hw::CostModel& cost,
                                        const std::vector<ContentionRule>& rules, const OpRecordSink& final_sink,
                                        int passes, double tolerance) {
  if (rules.empty()) return run(cost, final_sink);
  // Only the beside streams' intervals are kept (a rank's collectives: few); an op of a slowed
  // stream is scaled as its record comes, against the intervals of the pass before. At the fixed
  // point both passes are the same, so the scales are those of the plan form above.
  Overlap overlap(rules);
  std::unordered_map<int, double> used, next;  // op id -> scale (1 where absent): this pass's, the next's
  bool scaling = false;
  double moved = 0;
  const OpRecordSink collect = [&](const traces::OpRecord& op) {
    if (op.end.ns <= op.start.ns) return;
    overlap.note(op);
    if (!scaling || !overlap.slows(op.stream)) return;
    const double s = overlap.scale(op);
    auto u = used.find(op.id);
    moved = std::max(moved, std::abs(s - (u == used.end() ? 1.0 : u->second)));
    if (s != 1) next[op.id] = s;
  };
  traces::Report r = run(cost, collect);  // the collectives' intervals unstretched
  if (!overlap.end_pass()) return final_sink ? run(cost, final_sink) : r;  // no collective ran: nothing to stretch
  scaling = true;
  bool settled = false;  // r was simulated with `used`
  for (int pass = 0; pass < passes && !settled; ++pass) {
    moved = 0;
    next.clear();
    const int64_t last = r.iteration.ns;
    r = run(ScaledCostModel(cost, used), collect);
    overlap.end_pass();
    settled = moved <= tolerance;  // `used` reproduces itself (within tolerance): r is the fixed point
    // Ops whose overlap flips from pass to pass (a kernel that starts just as a collective does)
    // need not settle; the iteration does.
    settled = settled || (pass > 0 && std::abs(static_cast<double>(r.iteration.ns - last)) <=
                                          10 * tolerance * static_cast<double>(last));
    if (!settled) used = std::move(next);
  }
  // Out of passes, `used` is one pass ahead of r: one more run, with or without a sink, so that a
  // caller's records and its report come from the same scales.
  return final_sink || !settled ? run(ScaledCostModel(cost, used), final_sink) : r;
}

std::vector<ContentionRule> collective_sm_rules(const std::vector<std::string>& streams,
                                                const std::vector<std::string>& collective_roles, int sms,
                                                int channels) {
  std::vector<ContentionRule> rules;
  if (channels <= 0 || sms <= channels) return rules;
  const double slowdown = static_cast<double>(sms) / static_cast<double>(sms - channels);
  auto role = [](const std::string& s) {
    const size_t dot = s.rfind('.');
    return dot == std::string::npos ? s : s.substr(dot + 1);
  };
  for (const auto& c : streams) {
    if (role(c) != "compute") continue;
    ContentionRule rule{c, {}, slowdown};
    for (const auto& s : streams)
      if (std::find(collective_roles.begin(), collective_roles.end(), role(s)) != collective_roles.end() &&
          traces::host_of_stream(s) == traces::host_of_stream(c))
        rule.beside.push_back(s);
    if (!rule.beside.empty()) rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace protwin::sim
