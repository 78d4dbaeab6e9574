// The whole blocks' times sampled beside the steps (issue 22, `protwin interleave --block-probes`)
// and what `protwin calibrate` makes of them. On this machine a block's time (a gpt2-tiny decoder
// layer: tens of milliseconds, a working set beyond the core's L2) drifts by 5-10 % within tens of
// seconds while the L2-resident GEMM probe does not follow it, so three profiles taken between the
// rounds put the prediction's level wherever those three moments were (session 14: 10 % off in two
// quiet runs). Sampling the blocks once after every step spreads them over the same stretch of
// time as the steps; the prediction takes each block at the median of its samples and
// the bootstrap carries how sure that median is (docs/RUNTIME.md, "Blocks timed beside the steps").
// Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/op_profile.h"

namespace protwin::calib {

struct BlockProbes {
  std::map<std::string, std::vector<double>> us;  // signature key -> one run (us) after every step
  // After every step, the sum of the blocks' runs (every signature was timed then): the level of
  // the blocks at that moment, one sample per step for the bootstrap.
  std::vector<double> level_us;
  // The same samples by sweep, the warm-up sweep of each interleave left out: [sweep][plan in run
  // order], one sweep for each timed step of a plan (steps 2..N of every round), as calibrate keeps
  // the steps; so the bootstrap can resample whole sweeps (sim/calib/calibration.h).
  std::vector<std::vector<double>> sweep_level_us;
};

// Appends an interleave run's `block_probes` (its JSON: [{signature, us: [...]}], every series one
// run after every step; with its `steps` and `plans`, also by sweep: the runs go step by step, every
// plan in each). Throws protwin::Error naming `where` and the pointer when the series' lengths differ.
void add_block_probes(BlockProbes& into, const nlohmann::json& interleave, const std::string& where);

// `profile` with every block entry that has samples replaced by their median (count 1, as
// traces::with_block_medians writes it); other entries unchanged.
traces::OpProfile with_block_probes(const traces::OpProfile& profile, const BlockProbes& probes);

// `profile` with every block entry's time multiplied by `factor` (how much a prediction moves with
// the blocks' level: its sensitivity).
traces::OpProfile with_blocks_scaled(const traces::OpProfile& profile, double factor);

}  // namespace protwin::calib
