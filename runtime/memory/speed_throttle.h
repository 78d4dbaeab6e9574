// A process-wide slowdown of the emulated device: every device op (and the GEMM reference probe) is
// stretched to `factor` times its own duration by spinning after it. It stands in for a device
// whose speed drifts (a GPU's thermal or power throttling) in tests of drift-robust measurement
// (issue 22); at the default factor 1 nothing sleeps. The host is not the device: its CPU work
// (CPU Adam and the step's other host passes, the CPU Adam probe) and the runtime's own work per
// op (the executor's threads) keep their speed, as a real host does while its GPU throttles.
#pragma once

namespace protwin::rt {

// factor >= 1; applies to ops that start after the call (thread-safe).
void set_emulated_slowdown(double factor);
double emulated_slowdown();

// Spins for (factor - 1) x `elapsed_s`: call after work that took `elapsed_s` seconds.
void stretch(double elapsed_s);

// A separate slowdown of the emulated link (every copy of CopyEngine, and so the copy probe): a
// throttled copy runs at the rate / factor, an unthrottled one sleeps after it (stretch_copy), so a
// test can drift compute and copies by different factors (issue 22).
void set_emulated_copy_slowdown(double factor);  // factor >= 1
double emulated_copy_slowdown();
// Sleeps for (copy factor - 1) x `elapsed_s`: a slower link, not a busier core.
void stretch_copy(double elapsed_s);

}  // namespace protwin::rt
