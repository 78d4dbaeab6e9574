#include "sim/engine/contention.h"

#include <algorithm>
#include <map>
#include <utility>

#include "sim/engine/plan_simulator.h"

namespace protwin::sim {

namespace {

using Interval = std::pair<int64_t, int64_t>;

// Sorted, disjoint union of the ops' [start, end) on the given streams.
std::vector<Interval> busy_union(const traces::Report& r, const std::vector<std::string>& streams) {
  std::vector<Interval> v;
  for (const auto& op : r.ops)
    if (std::find(streams.begin(), streams.end(), op.stream) != streams.end() && op.end.ns > op.start.ns)
      v.emplace_back(op.start.ns, op.end.ns);
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

// The base cost model with each op's fixed time scaled.
class ScaledCostModel : public hw::CostModel {
 public:
  ScaledCostModel(const hw::CostModel& base, const std::vector<double>& scale) : base_(base), scale_(scale) {}
  std::vector<hw::LinkSpec> links() const override { return base_.links(); }
  int launch_queue_depth() const override { return base_.launch_queue_depth(); }
  hw::OpCost cost(const traces::Op& op, const traces::Plan& plan) const override {
    hw::OpCost c = base_.cost(op, plan);
    const double s = static_cast<size_t>(op.id) < scale_.size() ? scale_[op.id] : 1.0;
    c.fixed = SimTime{static_cast<int64_t>(static_cast<double>(c.fixed.ns) * s + 0.5)};
    return c;
  }

 private:
  const hw::CostModel& base_;
  const std::vector<double>& scale_;
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
  // copy_slowdown_with_compute is not used: a copy's time is its link transfer, which the link
  // model shares; only its latency is a fixed time.
  return rules;
}

traces::Report simulate_with_contention(const traces::Plan& plan, const hw::CostModel& cost,
                                        const std::vector<ContentionRule>& rules, int passes) {
  traces::Report r = PlanSimulator(cost).run(plan);
  if (rules.empty()) return r;
  std::vector<double> scale(plan.ops.size(), 1.0);
  for (int pass = 0; pass < passes; ++pass) {
    std::map<std::vector<std::string>, std::vector<Interval>> unions;
    for (const auto& rule : rules)
      if (!unions.count(rule.beside)) unions[rule.beside] = busy_union(r, rule.beside);
    for (const auto& op : r.ops) {
      // The scale applies to the base cost model's (unstretched) time; the share of the op that
      // other streams covered is read off this pass's schedule.
      const int64_t len = op.end.ns - op.start.ns;
      double s = 1;
      for (const auto& rule : rules)
        if (op.stream == rule.stream && len > 0)
          s += (rule.slowdown - 1) * static_cast<double>(covered(unions[rule.beside], op.start.ns, op.end.ns)) /
               static_cast<double>(len);
      scale[op.id] = s;
    }
    r = PlanSimulator(ScaledCostModel(cost, scale)).run(plan);
  }
  return r;
}

}  // namespace protwin::sim
