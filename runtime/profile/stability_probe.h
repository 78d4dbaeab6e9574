// How steady this machine's compute speed is: a fixed fp32 GEMM timed at regular intervals. On a
// shared VM the speed moves by tens of percent within seconds (steal time), which sets the
// resolution of any calibration against it (issue 7). The same GEMM, timed once beside every
// measured step, is the reference probe that expresses a step in the machine's speed at that
// moment (issue 22).
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

}  // namespace protwin::rt
