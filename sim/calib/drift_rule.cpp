#include "sim/calib/drift_rule.h"

#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <cmath>
#include <numeric>

#include "sim/calib/sample_stats.h"
#include "traces/error.h"

namespace protwin::calib {

namespace {

std::vector<double> logs(const std::vector<double>& x) {
  std::vector<double> out;
  for (double v : x) {
    PROTWIN_ASSERT(v > 0 && std::isfinite(v), "drift rule: probe speeds must be positive");
    out.push_back(std::log(v));
  }
  return out;
}

double mean(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size()); }

double sum_squares(const std::vector<double>& x) {  // about the mean
  const double m = mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s;
}

}  // namespace

nlohmann::json DriftTest::to_json() const {
  nlohmann::json j = {{"statistic", statistic}, {"df2", df2}, {"p_value", p_value}, {"effect", effect},
                      {"detected", detected}};
  if (df1 > 0) j["df1"] = df1;
  return j;
}

DriftTest drift_between_steps(const std::vector<double>& before, const std::vector<double>& after, double alpha) {
  PROTWIN_ASSERT(before.size() == after.size(), "drift rule: a before and an after probe per step");
  DriftTest t;
  const size_t n = before.size();
  if (n < 3) return t;
  const std::vector<double> lb = logs(before), la = logs(after);
  std::vector<double> pair_mean(n), diff(n);
  for (size_t i = 0; i < n; ++i) {
    pair_mean[i] = (lb[i] + la[i]) / 2;
    diff[i] = lb[i] - la[i];
  }
  const double df = static_cast<double>(n - 1);
  const double between = sum_squares(pair_mean) / df, noise = sum_squares(diff) / df / 4;
  t.df1 = t.df2 = df;
  t.effect = std::sqrt(between);
  if (noise <= 0) return t;  // identical probes around every step: nothing to compare against
  t.statistic = between / noise;
  t.p_value = boost::math::cdf(boost::math::complement(boost::math::fisher_f(df, df), t.statistic));
  t.detected = t.p_value < alpha;
  return t;
}

DriftTest level_shift(const std::vector<double>& profile_levels, const std::vector<double>& round_levels, double alpha) {
  DriftTest t;
  const size_t k = profile_levels.size(), r = round_levels.size();
  if (k == 0 || r == 0 || k + r < 3) return t;
  const std::vector<double> x = logs(profile_levels), y = logs(round_levels);
  t.df2 = static_cast<double>(k + r - 2);
  t.effect = mean(x) - mean(y);
  const double pooled = (sum_squares(x) + sum_squares(y)) / t.df2;
  if (pooled <= 0) return t;
  t.statistic = std::abs(t.effect) / std::sqrt(pooled * (1.0 / static_cast<double>(k) + 1.0 / static_cast<double>(r)));
  t.p_value = 2 * boost::math::cdf(boost::math::complement(boost::math::students_t(t.df2), t.statistic));
  t.detected = t.p_value < alpha;
  return t;
}

nlohmann::json ProbeCorrection::to_json() const {
  return {{"between_steps", between_steps.to_json()},
          {"level_vs_profile", level.to_json()},
          {"steps_median", steps_median},
          {"reference_used", reference},
          {"corrected", between_steps.detected ? (level.detected ? "between steps and level" : "between steps")
                                               : (level.detected ? "level" : "none (raw times)")}};
}

ProbeCorrection correct_probes(const std::vector<double>& profile_levels, const std::vector<double>& before,
                               const std::vector<double>& after, const std::vector<double>& own_speed,
                               const std::vector<int>& round, double alpha) {
  PROTWIN_ASSERT(!before.empty() && before.size() == after.size() && before.size() == own_speed.size() &&
                     before.size() == round.size(),
                 "drift rule: every step needs its probes, speed and round");
  ProbeCorrection c;
  std::vector<double> all = before;
  all.insert(all.end(), after.begin(), after.end());
  c.steps_median = quantile(all, 0.5);
  // Each round's level: the median of its steps' probes.
  std::vector<std::vector<double>> per_round;
  for (size_t s = 0; s < before.size(); ++s) {
    PROTWIN_ASSERT(round[s] >= 0, "drift rule: negative round");
    if (per_round.size() <= static_cast<size_t>(round[s])) per_round.resize(static_cast<size_t>(round[s]) + 1);
    per_round[static_cast<size_t>(round[s])].insert(per_round[static_cast<size_t>(round[s])].end(), {before[s], after[s]});
  }
  std::vector<double> round_levels;
  for (const auto& p : per_round)
    if (!p.empty()) round_levels.push_back(quantile(p, 0.5));
  c.between_steps = drift_between_steps(before, after, alpha);
  c.level = level_shift(profile_levels, round_levels, alpha);
  c.reference = c.level.detected ? quantile(profile_levels, 0.5) : c.steps_median;
  c.then = c.between_steps.detected ? own_speed : std::vector<double>(before.size(), c.steps_median);
  return c;
}

}  // namespace protwin::calib
