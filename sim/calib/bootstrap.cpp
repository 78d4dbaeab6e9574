#include "sim/calib/bootstrap.h"

#include <random>

#include "sim/calib/sample_stats.h"
#include "traces/error.h"

namespace protwin::calib {
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
