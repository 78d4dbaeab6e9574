// Predictions at the machine's speed of the moment (issue 22). A step of the emulated device uses
// three resources that a loaded or drifting machine slows by different amounts: the compute
// threads (GEMMs and kernels), the copy workers (sleep-throttled memcpys) and the CPU optimizer.
// Each has a reference probe (runtime/profile/stability_probe.h) timed beside every profiled op
// and beside every measured step. Instead of scaling a whole step by one probe, the plan is
// re-simulated with each resource's rates scaled by its own probe's ratio (reference / then), and
// the step is expressed at the reference speed as raw x predicted(reference) / predicted(then):
// only the part of the step that waits on a resource moves with that resource's probe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "sim/engine/contention.h"
#include "traces/op_profile.h"
#include "traces/plan.h"

namespace protwin::calib {

// The three probes' speeds: GEMM GFLOPS, copy GB/s, CPU Adam M params/s (0: unknown).
struct ProbeSpeeds {
  double gemm_gflops = 0, copy_gbps = 0, adam_mparams_per_s = 0;
};

// The reference speeds an op profile recorded (provenance reference_probe, reference_copy_probe,
// reference_adam_probe; 0 for a probe it lacks).
ProbeSpeeds probe_references(const nlohmann::json& provenance);

// Time multipliers of each resource at the moment of a step: reference speed / speed then.
struct ResourceScales {
  double compute = 1, copy = 1, cpu = 1;
};
// All speeds > 0.
ResourceScales scales_of(const ProbeSpeeds& then, const ProbeSpeeds& reference);

// The machine with every compute, copy and optimizer rate divided by its stream's scale
// (keys compute, h2d, d2h, cpu_optim; a scale = time multiplier). Host dispatch times (the
// runtime's own work per op and step among them) are host CPU work: they take cpu_optim's scale.
hw::Machine scaled_machine(const hw::Machine& base, const std::map<std::string, double>& scale);
// The machine with `bytes` of GPU memory (memory_bytes and usable_memory_bytes): calibrate's device.
hw::Machine with_capacity(const hw::Machine& m, int64_t bytes);
// 1 TiB: a byte-accounted device cap no plan reaches (the all-resident plan's peak; DDP on ranks).
inline constexpr int64_t kUncappedDeviceBytes = int64_t{1} << 40;
// The machine's host-link copy rates scaled from the profile's throttle (provenance link_GBps) to
// `link_GBps` (unchanged without a profiled rate, or at the same).
hw::Machine with_link(const hw::Machine& m, const traces::OpProfile* profile, double link_GBps);

// One plan's simulated iteration (with the profile's contention rules) at given resource scales.
// Scales are rounded to 0.5 % so that steps at nearly the same speeds share a simulation.
class SpeedScaledPredictor {
 public:
  SpeedScaledPredictor(traces::Plan plan, hw::Machine machine, const traces::OpProfile* profile,
                       std::vector<sim::ContentionRule> contention);
  double iteration_s(const ResourceScales& s);

 private:
  traces::Plan plan_;
  hw::Machine machine_;
  const traces::OpProfile* profile_;
  std::vector<sim::ContentionRule> contention_;
  std::map<std::tuple<long, long, long>, double> cache_;
};

// A step at the reference speeds: raw x predicted at the reference / predicted at the speeds then.
// All arguments > 0.
double at_reference_speeds(double raw_s, double predicted_reference_s, double predicted_then_s);

}  // namespace protwin::calib
