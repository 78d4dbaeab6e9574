// The runtime's own cost on this host (issue 22; #18 part 2): what a step costs beyond its ops'
// bodies. Per plan op: waking the op's stream thread, the executor's dependency check and
// bookkeeping, the replayer's profiler scope and the device's run_op wrapper: measured by running
// plans of empty ops through the real PlanExecutor and EmulatedDevice::run_op at two lengths (the
// slope). Per step: the replayer's setup and teardown around the ops (tokens to the device, the
// pool ledger, starting and joining the stream threads, the loss read back, the report's meta):
// measured on a real step of a real plan as its wall time outside its ops' span. `protwin
// profile` writes both into the machine's host_dispatch section (runtime_op_us, runtime_step_us),
// which the simulator charges on the ops' streams (hwmodels/machine.h). Each is taken at its
// fastest over the repeats: preemption by other processes is the machine's load, which the
// reference probes measure, not the runtime's own work.
#pragma once

#include <functional>

namespace protwin::rt {

struct RuntimePlan;

struct RuntimeOverheadOptions {
  int repeats = 15;                // steps per length; each length's fastest step is used
  int short_ops = 4, long_ops = 64;  // the two plan lengths (ops on one stream, each after the last)
  std::function<void()> op_body;   // what each op does (empty: nothing; tests put a known delay here)
};

struct RuntimeOverhead {
  double op_us = 0;    // per plan op, >= 0
  double step_us = 0;  // per step of the empty-op plans (threads, ledger; no replayer), >= 0
};

RuntimeOverhead measure_runtime_overhead(const RuntimeOverheadOptions& o = {});

// A real step's own work around its ops (the per-step cost above, with the replayer's): wall time
// minus the span from the first op's start to the last op's end, at its fastest over `steps`
// steps after one warm-up, on the emulated device at `link_gbps`.
double replayer_step_us(const RuntimePlan& rp, double link_gbps, int steps = 3);

}  // namespace protwin::rt
