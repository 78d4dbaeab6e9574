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

// An op of one of the rules' streams in one pass: `stream` indexes Spans::names.
struct Span {
  int id;
  int stream;
  int64_t start, end;
};

// The records of the rules' streams (each rule's own and its `beside`) of one pass.
class Spans {
 public:
  explicit Spans(const std::vector<ContentionRule>& rules) {
    for (const auto& rule : rules) {
      index(rule.stream);
      for (const auto& b : rule.beside) index(b);
    }
  }
  void add(const traces::OpRecord& op) {
    auto it = idx_.find(op.stream);
    if (it != idx_.end()) spans_.push_back({op.id, it->second, op.start.ns, op.end.ns});
  }
  void clear() { spans_.clear(); }

  // Sorted, disjoint union of the spans' [start, end) on the given streams.
  std::vector<Interval> busy_union(const std::vector<std::string>& streams) const {
    std::vector<int> want;
    for (const auto& s : streams) want.push_back(idx_.at(s));
    std::vector<Interval> v;
    for (const auto& sp : spans_)
      if (std::find(want.begin(), want.end(), sp.stream) != want.end() && sp.end > sp.start)
        v.emplace_back(sp.start, sp.end);
    return union_of(std::move(v));
  }

  // Each rule stream's op scaled by 1 + sum over rules of (slowdown - 1) x (share of its time the
  // rule's other streams covered in this pass); every other op 1. Returns the largest change.
  double update(const std::vector<ContentionRule>& rules, std::vector<double>& scale) const;

 private:
  int index(const std::string& name) {
    auto [it, added] = idx_.emplace(name, static_cast<int>(idx_.size()));
    return it->second;
  }
  std::map<std::string, int> idx_;
  std::vector<Span> spans_;
};

// Length of [a, b) covered by the union.
int64_t covered(const std::vector<Interval>& u, int64_t a, int64_t b) {
  auto it = std::upper_bound(u.begin(), u.end(), Interval{a, INT64_MAX});
  if (it != u.begin()) --it;
  int64_t c = 0;
  for (; it != u.end() && it->first < b; ++it) c += std::max<int64_t>(0, std::min(b, it->second) - std::max(a, it->first));
  return c;
}

double Spans::update(const std::vector<ContentionRule>& rules, std::vector<double>& scale) const {
  std::map<std::vector<std::string>, std::vector<Interval>> unions;
  for (const auto& rule : rules)
    if (!unions.count(rule.beside)) unions[rule.beside] = busy_union(rule.beside);
  std::vector<int> rule_stream;
  for (const auto& rule : rules) rule_stream.push_back(idx_.at(rule.stream));
  double moved = 0;
  for (const auto& sp : spans_) {
    // The scale applies to the base cost model's (unstretched) time; the share of the op that
    // other streams covered is read off this pass's schedule.
    const int64_t len = sp.end - sp.start;
    double s = 1;
    for (size_t i = 0; i < rules.size(); ++i)
      if (sp.stream == rule_stream[i] && len > 0)
        s += (rules[i].slowdown - 1) * static_cast<double>(covered(unions[rules[i].beside], sp.start, sp.end)) /
             static_cast<double>(len);
    if (static_cast<size_t>(sp.id) >= scale.size()) scale.resize(static_cast<size_t>(sp.id) + 1, 1.0);
    moved = std::max(moved, std::abs(s - scale[static_cast<size_t>(sp.id)]));
    scale[static_cast<size_t>(sp.id)] = s;
  }
  return moved;
}

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
  std::vector<double> scale(plan.ops.size(), 1.0);
  Spans spans(rules);
  for (int pass = 0; pass < passes; ++pass) {
    spans.clear();
    for (const auto& op : r.ops) spans.add(op);
    spans.update(rules, scale);
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
  std::map<std::string, std::vector<size_t>> slowed, beside;  // stream -> rules
  for (size_t i = 0; i < rules.size(); ++i) {
    slowed[rules[i].stream].push_back(i);
    for (const auto& b : rules[i].beside) beside[b].push_back(i);
  }
  std::vector<std::vector<Interval>> seen(rules.size()), before(rules.size());
  std::unordered_map<int, double> used, next;  // op id -> scale (1 where absent): this pass's, the next's
  bool scaling = false;
  double moved = 0;
  const OpRecordSink collect = [&](const traces::OpRecord& op) {
    const int64_t len = op.end.ns - op.start.ns;
    if (len <= 0) return;
    if (auto b = beside.find(op.stream); b != beside.end())
      for (size_t i : b->second) seen[i].emplace_back(op.start.ns, op.end.ns);
    auto sl = slowed.find(op.stream);
    if (!scaling || sl == slowed.end()) return;
    double s = 1;
    for (size_t i : sl->second)
      s += (rules[i].slowdown - 1) * static_cast<double>(covered(before[i], op.start.ns, op.end.ns)) /
           static_cast<double>(len);
    auto u = used.find(op.id);
    moved = std::max(moved, std::abs(s - (u == used.end() ? 1.0 : u->second)));
    if (s != 1) next[op.id] = s;
  };
  auto end_pass = [&] {
    bool any = false;
    for (size_t i = 0; i < rules.size(); ++i) {
      before[i] = union_of(std::move(seen[i]));
      seen[i].clear();
      any = any || !before[i].empty();
    }
    return any;
  };
  traces::Report r = run(cost, collect);  // the collectives' intervals unstretched
  if (!end_pass()) return final_sink ? run(cost, final_sink) : r;  // no collective ran: nothing to stretch
  scaling = true;
  bool settled = false;  // r was simulated with `used`
  for (int pass = 0; pass < passes && !settled; ++pass) {
    moved = 0;
    next.clear();
    const int64_t last = r.iteration.ns;
    r = run(ScaledCostModel(cost, used), collect);
    end_pass();
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
