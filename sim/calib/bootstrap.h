// Percentile bootstrap confidence intervals (Efron & Tibshirani, "An Introduction to the
// Bootstrap", ch. 13): how sure a statistic of noisy repeated measurements is. Seeded, so the
// same samples give the same intervals. Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::calib {

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
