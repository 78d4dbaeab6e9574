// The criteria of calibrate's N-rank cases (issue 23, "Done when"): iteration MAPE <= 5 %, max error
// <= 10 % and Spearman >= 0.9, each met only when its whole 95 % bootstrap interval is (steps
// resampled within each plan, the blocks' level with them: sim/calib/calibration.h), and the measured
// device peak within 5 % of the prediction for every plan. calibrate exits kRankCriteriaMissedExit
// when one is missed or undecided. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/calib/sample_stats.h"

namespace protwin::calib {

// {"intervals", "verdicts", "criteria_met"} of the section: `predicted` per plan, its sensitivity
// to the blocks' level, the level samples (empty: the steps alone), each plan's measured steps, and
// the largest relative error of a plan's device peak. With `sweep_levels` (rank_sweep_levels,
// sim/calib/rank_block_probes.h; empty: none) whole sweeps are resampled, every plan's step of a
// round's step index and the blocks after them together (sweep_paired_metrics_with_intervals);
// otherwise each plan's steps alone.
nlohmann::json judge_rank_criteria(const std::vector<double>& predicted, const std::vector<double>& sensitivity,
                                   const std::vector<double>& level_samples, const Groups& steps,
                                   double peak_device_max_error, int resamples, uint64_t seed,
                                   const std::vector<std::vector<double>>& sweep_levels = {});

// The section's criteria_met; false when it has none (not run, or no plan ran).
bool rank_criteria_met(const nlohmann::json& section);
// Whether a time criterion of the section is undecided (its interval straddles the target): more
// rounds may settle it. False when the section has no verdicts.
bool rank_criteria_undecided(const nlohmann::json& section);
// calibrate's exit code when a --ranks criterion is missed (README: exit codes).
inline constexpr int kRankCriteriaMissedExit = 3;

}  // namespace protwin::calib
