// Contention between streams that share hardware the simulator does not model as a link.
//
// On the emulated device, "GPU" compute, the copy workers and CPU Adam all run on the same host
// cores and memory: `protwin profile` measures how much slower a GEMM runs beside the copy workers
// or beside CPU Adam, and CPU Adam beside compute (recorded in the op profile's provenance,
// "contention"). A GPU has none of that (DMA engines copy, the CPU updates), so GPU machines carry
// no rules. Which ops overlap depends on the schedule, which depends on their durations: the
// simulation is repeated, each pass stretching every op by its slowdown over the share of its time
// that overlapped the other streams in the pass before, until it settles (a few passes).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::sim {

// An op on `stream` runs `slowdown` times slower while any op of `beside` runs.
struct ContentionRule {
  std::string stream;
  std::vector<std::string> beside;
  double slowdown = 1;
};

// The rules of an op profile's provenance "contention" block: compute beside the copy streams
// ("compute_slowdown_with_copies") and beside CPU Adam ("compute_slowdown_with_adam"), CPU Adam
// beside compute ("adam_slowdown_with_compute"), and in a profile the ranks of an N-rank run took
// together, compute beside the rank's collective stream ("compute_slowdown_with_collectives"); empty
// when it has none.
std::vector<ContentionRule> contention_rules_from_profile(const nlohmann::json& provenance);

// Simulates `plan`; with rules, re-simulates `passes` more times with each op's fixed time scaled
// by 1 + sum over rules of (slowdown - 1) x (share of the op's time beside those streams).
traces::Report simulate_with_contention(const traces::Plan& plan, const hw::CostModel& cost,
                                        const std::vector<ContentionRule>& rules, int passes = 8);

// A GPU's collectives and its compute share the SMs: NCCL runs one CTA per ring channel, and a
// GEMM's tiles leave no room beside them on an SM, so while a collective runs a compute kernel
// has sms - channels SMs (torch 2.1's NCCL 2.18: 24 channels on an 8-GPU NVSwitch node, of 108
// A100 or 132 H100 SMs). One rule per rank: its `compute` stream, `sms / (sms - channels)` times
// slower beside its streams whose role (the name after the last '.') is one of `collective_roles`
// (same host, traces::host_of_stream). None when channels is 0 (unknown).
std::vector<ContentionRule> collective_sm_rules(const std::vector<std::string>& streams,
                                                const std::vector<std::string>& collective_roles, int sms,
                                                int channels);

// One simulation of the same ops with each op's cost from `cost`; records go to `sink` (any order
// is fine) unless it is null.
using ContentionRun = std::function<traces::Report(const hw::CostModel& cost, const OpRecordSink& sink)>;

// simulate_with_contention for ops that are generated rather than held (a streamed plan): `run`
// is called once per pass, the last time with `final_sink` (which may be null). Memory stays
// bounded by the `beside` streams' ops: each pass keeps their intervals, and an op of a slowed
// stream is scaled as it ends against the intervals of the pass before; only ops with a scale
// other than 1 are held. Passes stop when no op's scale moves by more than `tolerance`, or when the
// iteration moved by at most 10 x `tolerance` (relative) since the pass before (ops whose overlap
// flips between passes need not settle), or after `passes` re-simulations after the first.
traces::Report simulate_with_contention(const ContentionRun& run, const hw::CostModel& cost,
                                        const std::vector<ContentionRule>& rules, const OpRecordSink& final_sink,
                                        int passes = 4, double tolerance = 1e-4);

}  // namespace protwin::sim
