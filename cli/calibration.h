// Calibration helpers for `protwin calibrate` (issue 7): error statistics (MAPE, max error,
// Spearman rank correlation) and the deterministic choice of diverse plans to measure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hwmodels/hardware_cost_model.h"
#include "sim/policy/knobs.h"
#include "sim/workload/workload.h"

namespace protwin::cli {

// Mean of |p - m| / m (a fraction, not %). Requires equal, non-empty lengths and m > 0.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);
// Max of |p - m| / m.
double max_relative_error(const std::vector<double>& predicted, const std::vector<double>& measured);
// Ranks 1..n, ties get the mean of their ranks.
std::vector<double> ranks(const std::vector<double>& x);
// Spearman's rho: Pearson correlation of the ranks (exact with ties). 0 when a side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

struct CalibrationCase {
  std::string label;        // "search best", "pareto 2", "deepspeed best", "hand: n_swap=2", ...
  sim::OffloadKnobs knobs;
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

}  // namespace protwin::cli
