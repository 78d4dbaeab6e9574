// calibrate --ranks's pure computation (issue 17 item 6, moved out of cli/calibration_ranks.cpp):
// each plan predicted on N ranks (the rank profile, every rank's blocks beside its steps, each
// rank's probed speeds, the joint simulation of all ranks, the interleaved launch's steps),
// compared with what its runs measured, and the section's metrics and criteria over the plans.
// The CLI runs mpirun, reads and writes the files and prints (cli/calibration_ranks.h).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "sim/calib/block_probes.h"
#include "sim/calib/sample_stats.h"
#include "sim/calib/speed_scaled_prediction.h"
#include "sim/engine/contention.h"
#include "sim/offload/search/search.h"
#include "traces/op_profile.h"
#include "traces/report.h"

namespace protwin::calib {

// The streams the section compares.
inline constexpr const char* kRankStreams[] = {"compute", "h2d", "d2h", "collective", "cpu_optim"};

// What the section predicts with.
struct RankPredictors {
  int ranks = 2;                                        // N
  const hw::Machine* machine = nullptr;                 // the calibration's machine with N GPUs
  const traces::OpProfile* one_rank_profile = nullptr;  // the calibration's profile (may be null)
  // A profile the N ranks took together (null without one), its machine (a rank's share of the
  // host), that machine priced by the profile, and the profile's contention rules.
  const traces::OpProfile* rank_profile = nullptr;
  const hw::Machine* rank_machine = nullptr;
  const hw::HardwareCostModel* rank_cost = nullptr;
  std::vector<sim::ContentionRule> contention;
  // The machine and profile of the speed-scaled and joint predictions: the rank profile's, else
  // the calibration's.
  const hw::Machine& speed_machine() const { return rank_profile ? *rank_machine : *machine; }
  const traces::OpProfile* speed_profile() const { return rank_profile ? rank_profile : one_rank_profile; }
};

// A plan's prediction: the rank profile's simulation (without one, the search's own report); with
// the rank profile and every rank's blocks beside its steps (`rank_blocks`), each rank at its own
// block medians and the slowest rank's step (sim/calib/block_probes.h).
struct RankPlanPrediction {
  traces::Report report;
  // knobs, predicted_s, searched_s; with the blocks also profile_blocks_predicted_s and
  // at_rank_blocks {ranks_s, slowest_rank, block_sensitivity}.
  nlohmann::json json;
};
RankPlanPrediction predict_rank_plan(const sim::offload::SearchResult& searched, const RankPredictors& p,
                                     const std::vector<BlockProbes>& rank_blocks);

// What one plan's runs measured.
struct RankCaseRuns {
  // Its runs merged (cli/rank_runs.h): iteration_s (the measured steps), rank_probes, the peaks,
  // compute_threads, wait_cpu_share.
  nlohmann::json runs;
  traces::Report rank0;           // rank 0's report of the last step
  nlohmann::json ranks_measured;  // where each rank's last step went (cli/rank_runs.h)
  // The interleaved launch (empty without): the plan's steps there, and each step's ranks' speeds
  // by its own probes and by the whole launch's (sim/calib/rank_step_speeds.h).
  std::vector<double> interleaved_s;
  std::vector<std::vector<ResourceScales>> step_scales, launch_scales;
};
// The case's comparison: measured_s, measured_steps_s, iteration_error, busy (per kRankStreams),
// ranks_measured, memory (per pool; the device's predicted from the runtime's tensors, beside the
// plan's own bytes and ProTrain's analytic peak); with the ranks' probes at_rank_speeds (each rank
// simulated alone at its speed, the slowest rank's step) and joint (all ranks in one simulation,
// sim/engine/joint_ranks.h); with the interleaved launch interleaved and interleaved_launch_speeds.
nlohmann::json compare_rank_case(const sim::offload::SearchResult& searched, const traces::Report& predicted,
                                 const RankPredictors& p, const RankCaseRuns& m);

// The section's metrics over its cases (each with the fields above; a case with "error" left out):
// metrics with the criteria on 95 % intervals (judge_rank_criteria below; `step_levels`: each
// measured case's runs' block levels, in order), metrics_profile_blocks, metrics_joint,
// metrics_joint_at_measured_compute, metrics_at_rank_speeds, metrics_interleaved and
// metrics_interleaved_launch_speeds (with `interleave_steps`), and block_probes (every rank's blocks
// beside its steps against `rank_profile`'s entries).
nlohmann::json rank_section_metrics(const nlohmann::json& cases,
                                    const std::vector<std::vector<std::vector<double>>>& step_levels,
                                    const std::vector<BlockProbes>& rank_blocks, const traces::OpProfile* rank_profile,
                                    int interleave_steps, int bootstrap_resamples, uint64_t bootstrap_seed);

// The criteria of calibrate's N-rank cases (issue 23, "Done when"): iteration MAPE <= 5 %, max error
// <= 10 % and Spearman >= 0.9, each met only when its whole 95 % bootstrap interval is (steps
// resampled within each plan, the blocks' level with them: sim/calib/calibration.h), and the measured
// device peak within 5 % of the prediction for every plan. calibrate exits kRankCriteriaMissedExit
// when one is missed or undecided.
//
// {"intervals", "verdicts", "criteria_met"} of the section: `predicted` per plan, its sensitivity
// to the blocks' level, the level samples (empty: the steps alone), each plan's measured steps, and
// the largest relative error of a plan's device peak. With `sweep_levels` (rank_sweep_levels,
// sim/calib/block_probes.h; empty: none) whole sweeps are resampled, every plan's step of a
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
