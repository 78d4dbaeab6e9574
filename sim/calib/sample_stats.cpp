#include "sim/calib/sample_stats.h"

#include <algorithm>
#include <cmath>

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

}  // namespace protwin::calib
