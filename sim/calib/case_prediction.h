// What `protwin calibrate` predicts for its cases (issue 17 item 6, moved out of cli/calibrate.cpp):
// the profile it predicts with after its profiled rounds, and each case simulated with it and with
// three variants of its blocks (kernels alone, blocks 5 % slower, blocks at the profiles' medians).
// The measurements do not enter: the CLI runs the rounds and compares.
#pragma once

#include <vector>

#include "hwmodels/machine.h"
#include "sim/calib/block_probes.h"
#include "sim/calib/case_comparison.h"
#include "sim/engine/contention.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/workload/workload.h"
#include "traces/op_profile.h"

namespace protwin::calib {

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

}  // namespace protwin::calib
