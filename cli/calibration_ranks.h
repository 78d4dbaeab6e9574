// calibrate's multi-rank cases (issue 23): each system's searched best plan for N GPUs of the
// calibration model, run on the runtime under `mpirun -np N` (one emulated device per rank,
// collectives over MPI capped at --net-GBps), against the simulator: iteration time, busy time per
// stream (compute, copies, collectives, CPU Adam), and measured memory per pool (the caching
// allocator's device peak, pinned and pageable peaks) beside ProTrain's analytic peak model.
// The plans are searched with the calibration's profile; they are predicted with a profile the N
// ranks take together under mpirun (each op at a rank's share of the machine), and the device
// peak with the runtime's tensors (sim/offload/analytic/runtime_memory.h).
// Issue 23, session 11: every plan runs `rounds` times, one plan after another; beside the
// single-rank predictions, the joint simulation of all ranks (sim/engine/joint_ranks.h), each at
// its own probed speeds, and a diagnostic of it at each rank's measured compute time.
// Kept apart from calibrate's single-rank loop: its own cases, its own report section.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "sim/workload/workload.h"
#include "traces/op_profile.h"

namespace protwin::cli {

struct RankCalibrationOptions {
  int ranks = 2;
  int steps = 4;           // per run; the first is warm-up
  int rounds = 5;          // runs of every plan at least, plan after plan (measured steps: rounds x (steps - 1))
  // Issue 23, session 18: after `rounds`, one more round at a time while a time criterion's interval
  // straddles its target and the round fits: the section's measuring takes at most budget_s in all.
  double budget_s = 0;
  double link_gbps = 0;    // the runtime's copy throttle (per rank and direction)
  double net_gbps = 1;     // the collectives' bus-bandwidth cap, and the machine's collective rate
  std::string out_dir;     // cases go into out_dir/ranks-<system>/
  std::string runtime;     // protwin-rt
  int threads = 2;         // search threads
  bool profile_ranks = true;  // predict with a profile taken by all N ranks at once (a rank's share)
  // The calibration's one-rank profile (may be null): with profile_ranks off, the per-rank
  // probed-speed prediction scales its kernels and reference probes instead of the rank profile's.
  const traces::OpProfile* one_rank_profile = nullptr;
  // Issue 23, session 12: > 0 runs every plan in ONE `mpirun -np N protwin interleave` launch, this
  // many steps each (the first warm-up), plan by plan step by step, each rank probing right before
  // and after every step; every step is then predicted by the joint simulation at both ranks'
  // speeds of that moment (sim/calib/rank_step_speeds.h), section "metrics_interleaved". 0: off.
  int interleave_steps = 0;
  int bootstrap_resamples = 2000;  // the criteria's 95 % intervals (sim/calib/calibration.h)
  uint64_t bootstrap_seed = 1;
};

using CostFactory = std::function<std::unique_ptr<hw::HardwareCostModel>(const hw::Machine&)>;

// `machine`: the calibration's (profiled, capacity and link set) one-GPU machine; it is given
// `ranks` GPUs and collectives at net_gbps. Returns the section's JSON ("cases", "metrics").
nlohmann::json calibrate_rank_cases(const sim::Workload& w, const hw::Machine& machine, const CostFactory& cost,
                                    const RankCalibrationOptions& o);
// The section as a table on stdout.
void print_rank_cases(const nlohmann::json& section);

}  // namespace protwin::cli
