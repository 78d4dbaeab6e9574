// Statistics of repeated measurements: order statistics (a machine's noise, a benchmark's spread)
// and percentile bootstrap confidence intervals (Efron & Tibshirani, "An Introduction to the
// Bootstrap", ch. 13: how sure a statistic of noisy repeated measurements is; seeded, so the same
// samples give the same intervals). Torch-free, shared by both binaries: protwin-rt measures,
// protwin calibrate summarises.
#pragma once

#include <cstdint>
#include <functional>
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

struct Interval {
  double lo = 0, hi = 0;
  nlohmann::json to_json() const { return nlohmann::json::array({lo, hi}); }
};

// Groups of samples (e.g. the measured steps of each plan); a statistic maps them to k values.
using Groups = std::vector<std::vector<double>>;
using GroupStatistic = std::function<std::vector<double>(const Groups&)>;

// Draws `resamples` bootstrap replicates, each resampling every group with replacement at its own
// size, evaluates `statistic` on each, and returns, per value, the central `level` (e.g. 0.95)
// interval of the replicates (percentiles, linear between order statistics). Requires non-empty
// groups, resamples >= 1 and 0 < level < 1.
std::vector<Interval> bootstrap_intervals(const Groups& groups, const GroupStatistic& statistic, int resamples,
                                          uint64_t seed, double level = 0.95);

// The same for samples that come in `slots` sharing a cause (issue 22: every plan's step of one
// interleave sweep ran within seconds of the others, at the machine's speed then, so the steps are
// not independent across plans): a replicate draws `slots` slot indices with replacement (a paired,
// or block, bootstrap: Efron & Tibshirani ch. 8.4 / 8.6) and `statistic` reads every group at them.
using SlotStatistic = std::function<std::vector<double>(const std::vector<size_t>& slots)>;
std::vector<Interval> bootstrap_slot_intervals(size_t slots, const SlotStatistic& statistic, int resamples,
                                               uint64_t seed, double level = 0.95);

}  // namespace protwin::calib
