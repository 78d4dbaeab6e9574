// What the profiler measured about the emulated device and its host, and the machine file
// (protwin.machine, schema of hwmodels/machines/host-emulated.json) built from it. Torch-free:
// the writer is a pure function so tests can check it against the machine reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/profile/collective_fit.h"

namespace protwin::rt {

// One point of a measured rate curve.
struct RatePoint {
  double x = 0;  // GFLOP per call (GEMM) or bytes per call (memory)
  double y = 0;  // TFLOPS or GB/s
};

struct HostMeasurements {
  std::string cpu;                      // model name from /proc/cpuinfo
  int cores = 0;
  int64_t memory_bytes = 0;             // physical memory
  int compute_threads = 0;              // ATen threads the GEMMs ran with
  std::vector<RatePoint> gemm;          // fp32 GEMMs: GFLOP per call -> TFLOPS
  std::vector<RatePoint> memory;        // elementwise add: bytes moved -> GB/s (compute threads)
  double dram_GBps = 0;                 // elementwise add, all cores, largest size
  double launch_floor_us = 0;           // one tiny ATen op
  double link_throttle_GBps = 0;        // --link-GBps of the copy workers (0: unthrottled)
  double h2d_GBps = 0, d2h_GBps = 0;    // one direction alone, large copies
  double h2d_latency_us = 0, d2h_latency_us = 0;
  double duplex_fraction = 1;           // rate kept by each direction when both run
  std::vector<RatePoint> copy_size;     // bytes per copy -> fraction of the large-copy rate
  double adam_params_per_s_1t = 0;      // CPU Adam, one thread (the runtime's optimizer worker)
  double adam_params_per_s_all = 0;     // CPU Adam, all cores
  double adam_fixed_us = 0;             // CPU Adam on a tiny buffer
  // DeepSpeed's step passes (runtime/optim/host_passes.h) at the compute split, ns per fp32 element
  // (0: not measured, the section is left out).
  double overflow_scan_ns_per_elem = 0, unscale_ns_per_elem = 0, fp16_copy_ns_per_elem = 0;
  double adam_torch_slowdown = 0;       // torch::optim::Adam time / adam_step_cpu time, 1 thread
                                        // (0: not measured; the derived 5.8 is written)
  // Slowdown of a compute kernel when the copy workers / CPU Adam run beside it (>= 1 in theory).
  double compute_slowdown_with_copies = 1, compute_slowdown_with_adam = 1;
  double copy_slowdown_with_compute = 1, adam_slowdown_with_compute = 1;
  // Of a compute kernel beside this rank's collectives, all ranks busy alike (0: not measured, one
  // rank).
  double compute_slowdown_with_collectives = 0;
  double collective_thread_cpu_share = 0;  // the collective thread's CPU time / wall time meanwhile
  double collective_tests_per_s = 0;       // its MPI_Test wake-ups per second meanwhile
  bool collective_single_copy = false;     // MPI moved large messages in one copy (it backed off)
  // The runtime's own work per plan op and per step (runtime_overhead.h); 0: not measured, the
  // host_dispatch section is left out.
  double runtime_op_us = 0, runtime_step_us = 0;
  // The runtime's collectives fitted on probe rows (collective_probe.h) by `mpirun -np N protwin
  // profile`, per machine-file kind; empty: not measured (one rank), the assumed section is written.
  std::map<std::string, CollectiveFit> collectives;
  std::vector<CollectiveRow> collective_rows;
  int collective_ranks = 0;
  double collective_net_GBps = 0;       // the throttle they ran under (0: uncapped)
  std::string when;                     // ISO time of the run
};

// x strictly increasing, y > 0 (points sorted by x; points with equal x averaged). Throws
// protwin::Error when no point is left.
std::vector<RatePoint> monotone_curve(std::vector<RatePoint> pts, const std::string& what);

// The machine document; every number has provenance "measured" (by `protwin profile`) except
// what a one-rank emulated device cannot measure (collectives, allocator, fp16/bf16), which keeps
// "assumed" entries.
nlohmann::json machine_json(const HostMeasurements& m, const std::string& name = "host-emulated");

}  // namespace protwin::rt
