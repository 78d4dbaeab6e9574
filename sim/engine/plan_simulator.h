// PlanSimulator: runs a Plan on the engine primitives with durations from a CostModel and
// returns the Report (DESIGN §1, §4).
//
// Semantics:
//  - Every op's OpCost is asked once, before simulating.
//  - An op depends on its listed deps and on the previous op of its stream (streams are in-order,
//    like CUDA streams); each stream is a Resource of capacity 1.
//  - Ready ops start in (time, priority, op id) order. At equal time, op ends (and transfer
//    completions) run before transfers start, which run before ops start, so memory freed at t
//    is available to an op starting at t.
//  - An op: at start its `at: start` memory effects apply, then its fixed time passes, then its
//    link transfer (if any) runs, shared max-min fairly with the other transfers; then its
//    `at: end` effects apply and it ends.
//  - Report: per-op start/end, per-stream busy time (sum of op durations), per-pool step curve
//    and peak (from plan.pools[i].initial). meta = {"source": "sim", "plan": plan.meta, "links"}.
// Deterministic: the same plan and cost model give a byte-identical report_to_string().
// Speed: the plan is first compiled into flat arrays (CSR successors, packed memory effects,
// 24-byte op costs, huge-page backed), so the event loop allocates nothing per op;
// `protwin bench engine` measures it (about 6 M ops/s on a 1M-op synthetic plan).
// run() keeps all its state local, so one PlanSimulator (or several) may run in many threads at
// once, provided the CostModel's cost() is thread-safe (const and stateless, as RateCostModel).
#pragma once

#include <cstdint>

#include "hwmodels/cost_model.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::sim {

// What one run cost (bench engine): the engine events it took and the thread CPU seconds of the
// event loop alone (without compiling the plan into arrays and building the Report).
struct RunStats {
  uint64_t events = 0;
  double event_loop_cpu_s = 0;
};

class PlanSimulator {
 public:
  explicit PlanSimulator(const hw::CostModel& cost) : cost_(&cost) {}

  // Throws protwin::Error naming the op for plans it cannot run: unknown stream or pool, bad dep
  // ids, a pool over capacity or below zero, a dependency cycle.
  // `stats`, when given, receives what the run cost (bench engine).
  traces::Report run(const traces::Plan& plan, RunStats* stats = nullptr) const;

 private:
  const hw::CostModel* cost_;
};

}  // namespace protwin::sim
