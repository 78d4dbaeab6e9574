// `protwin profile`: micro-benchmarks on the emulated device (DESIGN §5): the model's ops at the
// zoo's small models' shapes, copies through the throttled copy workers, CPU Adam, and how much
// compute, copies and the optimizer slow each other down on the shared cores. Results: an op
// profile (traces/op_profile.h, provenance measured) and the measurements a machine file is built
// from (host_measurements.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/profile/host_measurements.h"
#include "runtime/profile/profile_shapes.h"
#include "traces/op_profile.h"

namespace protwin::rt {

class RankGroup;

struct ProfileOptions {
  std::vector<traces::OpSignature> signatures;  // ops to time (default_profile_models() when empty)
  double link_gbps = 1.0;       // copy-worker throttle, as `protwin train --link-GBps`
  int compute_threads = 0;      // 0: the runtime's split for an offloading plan (cores - 1, >= 1)
  double min_seconds = 0.06;    // time per op: repeat until this much has run ...
  int min_repeats = 3, max_repeats = 30;  // ... within these bounds (after one warm-up run)
  int rounds = 3;               // passes over all ops, so a burst of load from other processes
                                // spreads over all of them instead of hitting a few
  int64_t flush_bytes = int64_t{48} << 20;  // written before every timed run, so an op meets its
                                            // inputs in DRAM as in a training step, not in the
                                            // cache its previous repeat warmed (0: hot caches)
  std::string step_plan;  // a plan file whose real step times the runtime's own work per step
                          // (runtime_overhead.h; empty: the empty-op plans' per-step cost)
  std::function<void(long done, long total)> progress;
  // Under mpirun (issue 23): the ranks profiling together. The contention windows then start
  // together on every rank, so a rank's compute is timed with its peers in the same state (all
  // alone, or all beside the same work), as in an N-rank step, where the ranks keep in step at
  // every collective; and compute is also timed beside this rank's collectives (collective_bytes
  // each). Null or one rank: neither.
  RankGroup* ranks = nullptr;
  int64_t collective_bytes = int64_t{4} << 20;
};

struct ProfileResult {
  traces::OpProfile profile;
  HostMeasurements host;
};

// Times one op signature on the CPU with the current ATen thread setting; fp32 only (the
// runtime's dtype). Throws protwin::Error for kinds it cannot run.
traces::OpTimeStats time_signature(const traces::OpSignature& sig, const ProfileOptions& o);

ProfileResult run_profile(const ProfileOptions& o);

}  // namespace protwin::rt
