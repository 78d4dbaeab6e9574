// Several plans measured step by step, round-robin, with the reference probes (a fixed GEMM, a
// throttled copy and a CPU Adam step, runtime/profile/stability_probe.h) timed just before and
// just after every step: on a machine
// whose speed drifts, every plan then sees the same stretch of time, and every step can be
// expressed in the machine's speed at that moment (issue 22). `protwin-rt interleave`.
// Runtime header: includes ATen (via the replayer).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/comm/rank_group.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/train/step_block_probes.h"
#include "traces/op_profile.h"
#include "traces/report.h"

namespace protwin::rt {

struct InterleaveOptions {
  int64_t steps = 4;             // steps per plan (the first is warm-up)
  double link_gbps = 0;          // copy throttle, as `protwin train --link-GBps`
  uint64_t seed = 0;             // weights and data start, as `protwin train --seed`
  std::string data;              // text for byte-level language modelling ("" = the default file)
  std::string device = "auto";
  // Called before every step (and its probes) with the running step index (0-based over all
  // plans and steps); tests inject a drifting machine speed here.
  std::function<void(int64_t)> before_step;
  // N ranks (issue 23, `mpirun -np N protwin interleave`): every rank runs every plan in the same
  // order on its rows of the global batch; the ranks meet before each step's clock starts (after
  // the probes), so a step's time is measured from a common start. nullptr: one rank.
  RankGroup* ranks = nullptr;
  double net_gbps = 0;  // the collectives' bus-bandwidth cap on N ranks, as `protwin train --net-GBps`
  // Whole blocks (runtime/profile/block_profile.h) timed once each after every step (after its
  // reference probes), as the profile times them (cache flush of block_flush_bytes, input warm),
  // so the blocks' times are sampled over the same stretch of time as the steps (issue 22: on this
  // machine a block's time drifts by 5-10 % within tens of seconds while the GEMM probe does not
  // follow). One rank only.
  std::vector<traces::OpSignature> block_probes;
  int64_t block_flush_bytes = int64_t{48} << 20;  // as ProfileOptions::flush_bytes
};

struct InterleavedPlan {
  std::vector<double> iteration_s;   // raw wall time of each step
  std::vector<double> losses;        // this rank's loss of each step (issue 23: checked against train's)
  std::vector<double> probe_before;  // reference GEMM GFLOPS just before each step
  std::vector<double> probe_after;   // ... and just after it
  // The other resources' reference probes (stability_probe.h), just before and after each step:
  // a 1 MiB copy at the link throttle (GB/s) and a one-thread CPU Adam step (M params/s).
  std::vector<double> copy_probe_before, copy_probe_after;
  std::vector<double> adam_probe_before, adam_probe_after;
  int64_t peak_device_bytes = 0, peak_host_bytes = 0;
  traces::Report last_report;        // measured report of the plan's last step
};

struct InterleavedResult {
  std::vector<InterleavedPlan> plans;  // in the order given
  std::vector<BlockProbeSeries> block_probes;  // InterleaveOptions::block_probes, in that order
  int compute_threads = 0;
  std::string device;
};

// Step s runs the plans in the given order when s is even and backwards when s is odd, so a
// drift within one sweep does not favour early plans. Every plan is checked and set up before the
// first step.
InterleavedResult run_interleaved(const std::vector<RuntimePlan>& plans, const InterleaveOptions& o);

}  // namespace protwin::rt
