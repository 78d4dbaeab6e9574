// Each rank's speed during every step of one `mpirun -np N protwin interleave` run (issue 23): all
// plans of a calibration in one launch, step by step in run_interleaved's order, every rank timing
// the reference probes (GEMM, copy, CPU Adam) right before and after every step. Each rank's
// probes give its speeds per step as on one rank (calibration.h step_speeds); the joint simulation
// then prices each rank's ops at those speeds (calibration_ranks.cpp). Torch-free.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/calib/speed_scaled_prediction.h"

namespace protwin::calib {

// One rank's probes, [plan][step] (the warm-up step included): before and after every step.
struct RankProbes {
  std::vector<std::vector<double>> gemm_before, gemm_after, copy_before, copy_after, adam_before, adam_after;
};

// From `protwin interleave --json` on N ranks: plans[i].ranks.<probe>[rank][step]. Result: per rank.
std::vector<RankProbes> rank_probes_of(const nlohmann::json& interleave);

// Each rank's time multipliers (reference / speed then, speeds_of step_speeds with `half_window`)
// for every step: result [plan][step][rank].
std::vector<std::vector<std::vector<ResourceScales>>> rank_step_scales(const std::vector<RankProbes>& ranks,
                                                                       const ProbeSpeeds& reference,
                                                                       size_t half_window);

}  // namespace protwin::calib
