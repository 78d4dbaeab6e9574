// One calibration case's two sides and what `protwin calibrate` computes from them (issue 17 item
// 6, moved out of cli/calibrate.cpp): the case simulated as calibrate predicts it (with the profile
// it predicts with after its profiled rounds, and with three variants of its blocks: kernels alone,
// blocks 5 % slower, blocks at the profiles' medians), the iteration-time and memory metrics over
// cases, the streams and pools a case is off by, and --fit's per-stream scales. The CLI runs the
// runtime and the rounds, fills the measured side and prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "sim/calib/block_probes.h"
#include "sim/engine/contention.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/offload/search/search.h"
#include "sim/workload/workload.h"
#include "traces/op_profile.h"
#include "traces/report.h"

namespace protwin::calib {

// The streams and pools calibrate compares.
inline constexpr const char* kCaseStreams[] = {"compute", "h2d", "d2h", "cpu_optim"};
inline constexpr const char* kCasePools[] = {"gpu", "pinned", "pageable"};

// (predicted - measured) / measured; 0 when measured <= 0.
double relative_error(double predicted, double measured);

// A case's plan simulated as calibrate predicts it.
struct SimulatedCase {
  double iteration_s = 0;
  std::map<std::string, double> busy;   // seconds per stream
  std::map<std::string, int64_t> peak;  // bytes per pool; gpu: the runtime's tensors, gpu_plan: the plan's own
  traces::Report report;
  sim::offload::CompiledPlan plan;
};
// The plan of knobs `k`, simulated with the cost model's contention rules (the emulated device's
// measured slowdowns of ops sharing its cores, sim/engine/contention.h). The device peak is what the runtime's tensors reach in the caching allocator (issue 23,
// sim/offload/analytic/runtime_memory.h); the plan's own bytes stay beside it as gpu_plan.
SimulatedCase simulate_case(const sim::Workload& w, const hw::HardwareCostModel& cost, const sim::offload::OffloadKnobs& k);

// The profile calibrate predicts with: `pooled` (the rounds' profiles merged) with each contention
// factor (provenance /contention: compute_slowdown_with_copies, compute_slowdown_with_adam,
// adam_slowdown_with_compute) the median of the `rounds`' own, a note saying so after the first
// round's, and each block that `probes` sampled beside the steps at the median of its runs there.
// `profile_blocks`, when given, receives the same profile with each block at the median of the
// rounds' profiles instead (traces::with_block_medians).
traces::OpProfile pooled_profile(const traces::OpProfile& pooled, const std::vector<traces::OpProfile>& rounds,
                                 const BlockProbes& probes, traces::OpProfile* profile_blocks = nullptr);

// A case's prediction and the variants calibrate reports beside it.
struct CasePrediction {
  SimulatedCase sim;                      // with the profile
  double kernels_predicted_s = 0;         // every block the sum of its kernels (traces::without_blocks)
  double block_sensitivity = 0;           // d ln predicted / d ln the blocks' time (0 without profile_blocks)
  double profile_blocks_predicted_s = 0;  // with `profile_blocks` (sim.iteration_s without)
};
// How much a prediction moves with the blocks' level: the blocks kBlockStep times slower.
inline constexpr double kBlockStep = 1.05;

// Each case (its knobs) of `w` on `machine`, priced by `profile` (null: the machine's curves) and
// simulated by simulate_case, every variant's cost model with the rules `contention`. `profile_blocks` (null when the blocks were not
// sampled beside the steps) gives the sensitivity and the profile-blocks variant.
std::vector<CasePrediction> predict_cases(const sim::Workload& w, const hw::Machine& machine,
                                          const traces::OpProfile* profile, const traces::OpProfile* profile_blocks,
                                          const std::vector<sim::offload::OffloadKnobs>& cases,
                                          const std::vector<sim::ContentionRule>& contention);

// What calibrate compares in one case: the predictions and the measurement.
struct CaseOutcome {
  double predicted_s = 0, measured_s = 0;
  std::map<std::string, double> pred_busy, meas_busy;   // seconds per stream
  std::map<std::string, int64_t> pred_peak, meas_peak;  // bytes per pool
  double fitted_predicted_s = 0;   // with --fit's scales
  double kernels_predicted_s = 0;  // blocks priced by their kernels alone (no whole-block entries)
  double profile_blocks_predicted_s = 0;  // blocks at the profiles' medians (not the steps' block probes)
};

struct CaseMetrics {
  size_t n = 0;
  double mape = 0, max_error = 0, mean_error = 0, spearman = 0, peak_mape = 0, host_peak_mape = 0, best_gap = 0;
  bool best_is_best = false;
  nlohmann::json to_json() const;
};
// The metrics of `cases` (each measured) with the prediction `predicted` (predicted_s, or one of
// the other predictions): iteration time (MAPE, max and mean signed error, Spearman, best-plan gap),
// the device peak's MAPE and the host pools' (pinned + pageable; 0 unless every case measured some).
CaseMetrics case_metrics(const std::vector<const CaseOutcome*>& cases,
                         double CaseOutcome::*predicted = &CaseOutcome::predicted_s);

// MAPE of the plan's own device bytes against the measured allocator peak (the figure the
// runtime memory model replaced as the prediction), over the cases that have both.
double plan_bytes_mape(const std::vector<const CaseOutcome*>& cases);

// "compute +12%, pool gpu -4%": the streams and pools off by more than `tol`, worst first (a stream
// only when its error is also over 2 % of the measured iteration); "-" when none is.
std::string diagnosis(const CaseOutcome& c, double tol);

// --fit: one time scale per stream (kCaseStreams), the measured busy time over the predicted one
// summed over `train`; 1 where either sum is below 1 us.
std::map<std::string, double> fit_stream_scales(const std::vector<const CaseOutcome*>& train);

}  // namespace protwin::calib
