// Calibration helpers for `protwin calibrate` (issue 7): error statistics (MAPE, max error,
// Spearman rank correlation) and the deterministic choice of diverse plans to measure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/calib/sample_stats.h"
#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/workload/workload.h"

namespace protwin::calib {

// Mean of |p - m| / m (a fraction, not %). Requires equal, non-empty lengths and m > 0.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);
// Max of |p - m| / m.
double max_relative_error(const std::vector<double>& predicted, const std::vector<double>& measured);
// Ranks 1..n, ties get the mean of their ranks.
std::vector<double> ranks(const std::vector<double>& x);
// Spearman's rho: Pearson correlation of the ranks (exact with ties). 0 when a side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// A step's time expressed at the reference speed (issue 22): raw x (the machine's speed during the
// step / the reference speed), speeds in GFLOPS of the reference probe; the reference is the
// probe's speed while the profile that predicts the step was taken. All arguments > 0.
double at_reference_speed(double raw_s, double speed, double reference);

// The machine's speed during each step of one `protwin-rt interleave` run: `before[i][s]` and
// `after[i][s]` are the probes around step s of plan i; the steps ran in run_interleaved's order
// (plans forwards on even steps, backwards on odd ones). A step's own probes catch whichever
// scheduler slices they happened to get on a loaded machine (tens of percent within 20 ms), so
// each step gets the median of the probes of the steps within `half_window` steps of it in time.
// Result: [plan][step].
std::vector<std::vector<double>> step_speeds(const std::vector<std::vector<double>>& before,
                                             const std::vector<std::vector<double>>& after, size_t half_window);

// Iteration-time metrics of predictions against measurements (one per plan):
// {MAPE, max relative error, Spearman, best-plan gap (measured time of the best predicted plan /
// measured best - 1)}.
enum IterationMetric { kMape = 0, kMaxError, kSpearman, kBestGap, kIterationMetrics };
std::vector<double> iteration_metrics(const std::vector<double>& predicted, const std::vector<double>& measured);

// The metrics with each plan measured by the median of its steps, and their bootstrap intervals
// (steps resampled within each plan, over every round): the point values and the intervals.
struct MetricsWithIntervals {
  std::vector<double> point;
  std::vector<Interval> interval;
};
// With how sure the prediction is (issue 22): plan i's prediction moves with the blocks' level f
// as predicted[i] x (1 + sensitivity[i] (f - 1)) (sensitivity: d ln predicted / d ln blocks'
// time), and f is the median of `level_samples` (one per step) over its point value, resampled
// with the steps (an extra group). Empty level_samples (and sensitivity): the steps alone.
MetricsWithIntervals iteration_metrics_with_intervals(const std::vector<double>& predicted,
                                                      const std::vector<double>& sensitivity,
                                                      const std::vector<double>& level_samples, const Groups& steps,
                                                      int resamples, uint64_t seed, double level = 0.95);

// As above, but the steps are paired by sweep (issue 22): steps[i][k] of every plan i ran in sweep
// k of an interleave, seconds apart and at the machine's speed then, and sweep_levels[k] holds the
// blocks' level after each plan's step of that sweep. A replicate resamples whole sweeps, so a drift
// shared by a sweep moves every plan's median and the prediction's block level together, as it did;
// resampling each plan's steps alone treats them as independent and mixes one plan's slow sweeps
// with another's fast ones (a near-tie's best-plan gap then spread to 10 % on steps whose ratio
// within a sweep stays near 1). f is the median of the selected sweeps' level samples over that of
// all sweeps. Requires every plan to have one step per sweep (sweep_levels empty: steps alone).
MetricsWithIntervals sweep_paired_metrics_with_intervals(const std::vector<double>& predicted,
                                                         const std::vector<double>& sensitivity,
                                                         const std::vector<std::vector<double>>& sweep_levels,
                                                         const Groups& steps, int resamples, uint64_t seed,
                                                         double level = 0.95);

// A criterion judged on an interval: met when all of it satisfies the target, not met when none
// of it does, undecided (more samples may settle it) otherwise.
enum class Verdict { kMet, kNotMet, kUndecided };
Verdict judge_at_most(const Interval& i, double target);
Verdict judge_at_least(const Interval& i, double target);
const char* verdict_text(Verdict v);  // "met", "NOT met", "undecided"

// Whether calibrate measures another round within --budget-s (issue 22): a round added while a
// criterion is undecided only measures (no profile first), so it is priced at the length of the
// last round's measuring part, not of the whole profiled round (about twice as long).
bool another_round_fits(double elapsed_s, double last_measure_s, double budget_s);

// The order in which round `round` runs `plans` plans in its `protwin-rt interleave` (issue 22):
// a rotation of 0..plans-1 starting at floor(frac(round x 0.618...) x plans) (the golden-ratio
// sequence: 0, 7, 2, 10, 5, ... for 12 plans). A plan's place in one interleave process moves its
// time (llama-tiny's 12 plans, two of them swapped between first and sixth place in 6 processes:
// first place 2.6 % slower; cause unknown; experiments/twin-accuracy, session 16), and in a fixed
// order the first place always went to case 0, ProTrain's searched best. Rotated, it goes to a
// different, well-spread plan every round and lands in the steps' spread, not in one plan's median.
std::vector<size_t> round_plan_order(size_t plans, int round);

struct CalibrationCase {
  std::string label;        // "search best", "pareto 2", "deepspeed best", "hand: n_swap=2", ...
  sim::offload::OffloadKnobs knobs;
  std::string system;       // the family the knobs come from
};

struct CaseSelection {
  std::vector<CalibrationCase> cases;
  std::vector<std::string> skipped;  // label: why (did not fit, duplicate, ...)
};

// Picks up to `count` plans that fit `cost`'s machine: ProTrain's searched best and simulated
// Pareto front, each baseline family's best (deepspeed, zero-offload, colossalai, fsdp, ddp), then
// hand-picked knob settings (buffers, persistent chunks, swap, checkpoint, no prefetch, no
// overlap, no buffer reuse, torch CPU Adam, per-block chunks), in that order; duplicates (same
// knobs) are dropped. Deterministic: same inputs, same list.
CaseSelection select_cases(const sim::Workload& w, const hw::HardwareCostModel& cost, int count, int threads = 2);

}  // namespace protwin::calib
