// Order statistics of repeated measurements (a machine's noise, a benchmark's spread). Torch-free,
// shared by both binaries: protwin-rt measures, protwin calibrate summarises.
#pragma once

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::calib {

struct Spread {
  size_t n = 0;
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0;
  double relative = 0;  // (p90 - p10) / median: the band that holds 80 % of the samples
  nlohmann::json to_json() const;
};

// Quantile q in [0, 1] of `x`, linear between order statistics (numpy's default). Requires x non-empty.
double quantile(std::vector<double> x, double q);

// The distribution-free ~95 % interval of the median of `x` (order statistics): the values of ranks
// k and n + 1 - k, k the largest with P(X < k) <= 2.5 % for X ~ Bin(n, 1/2); the whole range below
// 6 samples. Requires x non-empty.
std::pair<double, double> median_interval(std::vector<double> x);

// min, p10, median, p90, max of `x` (all 0 when x is empty).
Spread spread_of(const std::vector<double>& x);

}  // namespace protwin::calib
