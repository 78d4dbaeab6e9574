// The training loop: replays a plan once per optimizer step on byte-level batches, with
// checkpoints and resume. Everything that can be refused (plan, data file, checkpoint) is checked
// before the first step, so a bad input never overwrites an output.
// Runtime header: includes ATen (via the replayer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/executor/runtime_plan.h"
#include "runtime/train/byte_dataset.h"
#include "runtime/train/step_block_probes.h"
#include "traces/report.h"

namespace protwin::rt {

struct TrainOptions {
  int64_t steps = 10;            // total optimizer steps; a resumed run continues up to this
  std::string data = kDefaultDataFile;
  uint64_t seed = 0;             // weights and the data start position
  double link_gbps = 0;          // 0 = unthrottled copies
  double net_gbps = 0;           // collectives' bus bandwidth cap (N ranks); 0 = uncapped
  int compute_threads = 0;       // 0 = ThreadSplit::choose
  double lr = 1e-3;
  std::string checkpoint_dir;    // "" = no checkpoints
  int64_t checkpoint_every = 0;  // steps between checkpoints; 0 = only after the last step
  std::string resume_dir;        // "" = start from step 0
  std::string device = "auto";   // "auto" | "cuda" | "emulated" (runtime/cuda/device.h)
  // Time the reference probes (runtime/profile/stability_probe.h: GEMM, copy, CPU Adam, at the
  // profile's compute split) just before and after every step: this rank's speeds then.
  bool probes = false;
  // Whole blocks (runtime/train/step_block_probes.h) timed once each after every step (after its
  // probes), on every rank, the ranks together (issue 23: the 2-rank calibration prices each
  // block at the median of its runs beside the steps, as issue 22's one-rank calibration).
  std::vector<traces::OpSignature> block_probes;
  int64_t block_flush_bytes = int64_t{48} << 20;  // as ProfileOptions::flush_bytes
};

// One step's reference probes (TrainOptions::probes): GEMM GFLOPS, copy GB/s, CPU Adam M params/s.
struct StepProbes {
  double gemm_before = 0, gemm_after = 0, copy_before = 0, copy_after = 0, adam_before = 0, adam_after = 0;
};

struct TrainResult {
  int64_t first_step = 1;        // 1-based step of losses[0]
  int64_t last_step = 0;
  std::vector<double> losses;
  std::vector<double> iteration_s;
  int64_t tokens_per_step = 0;
  double tokens_per_s = 0;       // over the steps after the first (warm-up), else all
  int64_t peak_device_bytes = 0;           // measured (StepResult), max over steps
  int64_t peak_device_reserved_bytes = 0;
  int64_t peak_pinned_bytes = 0, peak_pageable_bytes = 0;
  int64_t plan_peak_device_bytes = 0;      // the plan's bytes at the real times
  int64_t peak_host_bytes = 0;             // the plan's host bytes at the real times
  int64_t plan_device_high_water = 0;
  int64_t device_capacity = 0;
  int compute_threads = 0;
  int ranks = 1;                 // processes replaying the plan (mpirun -np)
  int rank = 0;                  // this process's rank; losses are the mean over ranks, memory this rank's
  std::string device;            // the device that replayed the plan
  traces::Report last_report;    // measured report of the last step
  std::vector<StepProbes> probes;  // per step, this rank's (TrainOptions::probes)
  std::vector<BlockProbeSeries> block_probes;  // this rank's (TrainOptions::block_probes, in that order)
};

// On N ranks (rp.ranks, RankGroup::world() under mpirun) every rank calls this: each trains on its
// rows r*B .. (r+1)*B - 1 of the global batch of N*B sequences (the 1-rank plan of batch N*B sees
// the same data), the reported loss is the mean of the ranks' losses, and rank 0 writes the
// checkpoints.
TrainResult train(const RuntimePlan& rp, const TrainOptions& options);

}  // namespace protwin::rt
