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

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/machine.h"
#include "sim/engine/contention.h"
#include "traces/op_profile.h"
#include "traces/plan.h"
#include "traces/report.h"

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

// Each rank's blocks timed beside its steps (issue 23, session 16: issue 22's method, above,
// on N ranks). On this machine a whole block's time drifts 5-10 % within tens of seconds while
// the GEMM probe does not follow it; the rank profile's block entries, timed once before the runs,
// spread by up to 15 % from run to run, and llama-tiny's 2-rank steps ran their blocks 5-12 %
// longer than it said. So `calibrate --ranks` runs `protwin train --block-probes`: every rank times
// every block of the plan once after every step, the ranks together. Each rank's prediction prices
// every block at the median of that rank's runs (with_block_probes), the ranks meet at every
// collective so the step is the slowest rank's, and the bootstrap resamples the blocks' level (all
// ranks' summed block time after each step) with the steps (sim/calib/calibration.h).

// Appends one `protwin train --block-probes --json` run's `rank_block_probes` ([rank][{signature,
// us}]) to `ranks` (one BlockProbes per rank; sized on the first run). Throws protwin::Error naming
// `where` and the pointer when the run has another rank count than the runs before, a series
// another length than its rank's first, or other blocks than the runs before (their sums would not
// be comparable levels). A run without block probes adds nothing.
void add_rank_block_probes(std::vector<BlockProbes>& ranks, const nlohmann::json& train, const std::string& where);

// The blocks' level after every step: the sum over ranks of each rank's level_us (the ranks run the
// same steps, so their samples pair up), from sample `from` on (e.g. the last run's). Empty when no
// rank has samples.
std::vector<double> summed_level(const std::vector<BlockProbes>& ranks, size_t from = 0);

// The blocks' level by sweep for calibrate --ranks, which runs every plan once per round, one
// after another: sweep (r, s) holds every plan's level after step s of its round-r run (s >= 1:
// the first step of a run is warm-up), in plan order; `run_levels[plan][run]` is each run's
// summed_level. Steps of one round ran within seconds of each other, rounds tens of seconds apart
// (calibrate resamples whole sweeps: sim/calib/calibration.h). Empty when the plans ran different
// numbers of runs or steps, or a run has no block probes: they cannot be paired.
std::vector<std::vector<double>> rank_sweep_levels(const std::vector<std::vector<std::vector<double>>>& run_levels);

struct RankBlocksPrediction {
  std::vector<double> rank_s;  // each rank's simulated iteration, its blocks at its own medians
  size_t slowest = 0;          // the rank that sets the step
  double iteration_s = 0;      // rank_s[slowest]
  traces::Report report;       // the slowest rank's simulated report
};

// The plan simulated (with `contention`) once per rank, on `machine` with `profile` whose block
// entries are that rank's medians beside its steps, times `blocks_factor` (1: the prediction; 1.05:
// its sensitivity to the blocks' level). `ranks` must not be empty.
RankBlocksPrediction predict_at_rank_blocks(const traces::Plan& plan, const hw::Machine& machine,
                                            const traces::OpProfile& profile,
                                            const std::vector<sim::ContentionRule>& contention,
                                            const std::vector<BlockProbes>& ranks, double blocks_factor = 1);

}  // namespace protwin::calib
