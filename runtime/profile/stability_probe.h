// How steady this machine's compute speed is: a fixed fp32 GEMM timed at regular intervals. On a
// shared VM the speed moves by tens of percent within seconds (steal time), which sets the
// resolution of any calibration against it (issue 7). The same GEMM, timed once beside every
// measured step, is the reference probe that expresses a step in the machine's speed at that
// moment (issue 22); a throttled copy and a CPU Adam step do the same for the copy streams and
// the optimizer.
#pragma once

#include <vector>

namespace protwin::rt {

struct StabilityOptions {
  double seconds = 5;      // how long to sample
  double interval_s = 0.2; // pause between samples
  int threads = 1;         // ATen threads of the GEMMs (the emulated device's compute threads)
};

// GFLOPS of 20 back-to-back 256 x 256 x 256 fp32 GEMMs, one value per sample.
std::vector<double> gemm_speed_samples(const StabilityOptions& o);

// One sample of that GEMM's speed (GFLOPS: 60 of them back to back) with the current ATen thread
// setting, stretched by the emulated slowdown (runtime/memory/speed_throttle.h) like every op of
// the emulated device.
double reference_gemm_gflops();

// The reference probes of the other resources a step uses (issue 22), each as the runtime uses
// it: GB/s of one 1 MiB copy through the runtime's CopyEngine at `link_gbps` (0: unthrottled),
// stretched by the emulated copy slowdown; and millions of parameters per second of
// adam_step_cpu on one thread (the optimizer worker's): the host CPU's speed, which the emulated
// device's slowdown leaves alone (speed_throttle.h) and which also paces the runtime's own work per
// op (the host_dispatch section's runtime costs, sim/calib/speed_scaled_prediction.h).
double reference_copy_gbps(double link_gbps);
double reference_adam_mparams_per_s();

}  // namespace protwin::rt
