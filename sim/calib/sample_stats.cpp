#include "sim/calib/sample_stats.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "traces/error.h"

namespace protwin::calib {

double quantile(std::vector<double> x, double q) {
  PROTWIN_CHECK(!x.empty(), "quantile of no samples");
  std::sort(x.begin(), x.end());
  const double pos = q * static_cast<double>(x.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (pos - static_cast<double>(lo)) * (x[hi] - x[lo]);
}

std::pair<double, double> median_interval(std::vector<double> x) {
  PROTWIN_CHECK(!x.empty(), "median interval of no samples");
  std::sort(x.begin(), x.end());
  const int n = static_cast<int>(x.size());
  int k = 1;
  double cdf = 0, choose = 1;  // P(X <= j) and C(n, j)
  for (int j = 0; j < n / 2; ++j) {
    cdf += choose * std::pow(0.5, n);
    if (cdf > 0.025) break;
    k = j + 1;  // P(X < j + 1) <= 2.5 %
    choose = choose * (n - j) / (j + 1);
  }
  return {x[k - 1], x[n - k]};
}

Spread spread_of(const std::vector<double>& x) {
  Spread s;
  s.n = x.size();
  if (x.empty()) return s;
  s.min = *std::min_element(x.begin(), x.end());
  s.max = *std::max_element(x.begin(), x.end());
  s.p10 = quantile(x, 0.10);
  s.median = quantile(x, 0.50);
  s.p90 = quantile(x, 0.90);
  s.relative = s.median > 0 ? (s.p90 - s.p10) / s.median : 0;
  return s;
}

nlohmann::json Spread::to_json() const {
  return {{"samples", n}, {"min", min}, {"p10", p10}, {"median", median}, {"p90", p90}, {"max", max},
          {"p10_p90_relative", relative}};
}

namespace {

// `resamples` replicates of `replicate(rng)`, each value's central `level` interval.
std::vector<Interval> percentile_intervals(int resamples, uint64_t seed, double level,
                                           const std::function<std::vector<double>(std::mt19937_64&)>& replicate) {
  PROTWIN_CHECK(resamples >= 1 && level > 0 && level < 1, "bootstrap: bad arguments");
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> replicates;  // [value][replicate]
  for (int b = 0; b < resamples; ++b) {
    const std::vector<double> v = replicate(rng);
    if (replicates.empty()) replicates.resize(v.size());
    PROTWIN_ASSERT(v.size() == replicates.size(), "bootstrap: the statistic changed its number of values");
    for (size_t k = 0; k < v.size(); ++k) replicates[k].push_back(v[k]);
  }
  std::vector<Interval> out;
  for (const auto& r : replicates) out.push_back({quantile(r, (1 - level) / 2), quantile(r, (1 + level) / 2)});
  return out;
}

}  // namespace

std::vector<Interval> bootstrap_intervals(const Groups& groups, const GroupStatistic& statistic, int resamples,
                                          uint64_t seed, double level) {
  PROTWIN_CHECK(!groups.empty(), "bootstrap: no groups");
  for (const auto& g : groups) PROTWIN_CHECK(!g.empty(), "bootstrap: a group has no samples");
  Groups draw(groups.size());
  return percentile_intervals(resamples, seed, level, [&](std::mt19937_64& rng) {
    for (size_t i = 0; i < groups.size(); ++i) {
      std::uniform_int_distribution<size_t> pick(0, groups[i].size() - 1);
      draw[i].resize(groups[i].size());
      for (double& x : draw[i]) x = groups[i][pick(rng)];
    }
    return statistic(draw);
  });
}

std::vector<Interval> bootstrap_slot_intervals(size_t slots, const SlotStatistic& statistic, int resamples,
                                               uint64_t seed, double level) {
  PROTWIN_CHECK(slots >= 1, "bootstrap: no slots");
  std::vector<size_t> draw(slots);
  return percentile_intervals(resamples, seed, level, [&](std::mt19937_64& rng) {
    std::uniform_int_distribution<size_t> pick(0, slots - 1);
    for (size_t& k : draw) k = pick(rng);
    return statistic(draw);
  });
}

}  // namespace protwin::calib
