#include "sim/calib/rank_criteria.h"

#include <algorithm>
#include <iterator>

#include "sim/calib/calibration.h"

namespace protwin::calib {

nlohmann::json judge_rank_criteria(const std::vector<double>& predicted, const std::vector<double>& sensitivity,
                                   const std::vector<double>& level_samples, const Groups& steps,
                                   double peak_device_max_error, int resamples, uint64_t seed,
                                   const std::vector<std::vector<double>>& sweep_levels) {
  const bool paired = !sweep_levels.empty();
  const MetricsWithIntervals ci =
      paired ? sweep_paired_metrics_with_intervals(predicted, sensitivity, sweep_levels, steps, resamples, seed)
             : iteration_metrics_with_intervals(predicted, sensitivity, level_samples, steps, resamples, seed);
  const Verdict v[] = {judge_at_most(ci.interval[kMape], 0.05), judge_at_most(ci.interval[kMaxError], 0.10),
                       judge_at_least(ci.interval[kSpearman], 0.9)};
  const bool peak_ok = peak_device_max_error <= 0.05;
  return {{"intervals", {{"iteration_time_mape", ci.interval[kMape].to_json()},
                         {"iteration_time_max_error", ci.interval[kMaxError].to_json()},
                         {"spearman", ci.interval[kSpearman].to_json()},
                         {"level", 0.95},
                         {"resamples", resamples},
                         {"block_level_samples", level_samples.size()},
                         {"resample", paired ? "sweeps (every plan's step of a round's step index and the blocks' "
                                               "level after them together)"
                                             : "steps within each plan (the blocks' level as one more group)"}}},
          {"verdicts", {{"iteration_time_mape", verdict_text(v[0])},
                        {"iteration_time_max_error", verdict_text(v[1])},
                        {"spearman", verdict_text(v[2])},
                        {"peak_device_max_error", peak_ok ? "met" : "NOT met"}}},
          {"criteria_met",
           peak_ok && std::all_of(std::begin(v), std::end(v), [](Verdict x) { return x == Verdict::kMet; })}};
}

bool rank_criteria_met(const nlohmann::json& section) { return section.value("criteria_met", false); }

bool rank_criteria_undecided(const nlohmann::json& section) {
  if (!section.contains("verdicts")) return false;
  const std::string undecided = verdict_text(Verdict::kUndecided);
  for (const char* k : {"iteration_time_mape", "iteration_time_max_error", "spearman"})
    if (section["verdicts"].value(k, "") == undecided) return true;
  return false;
}

}  // namespace protwin::calib
