// PlanExecutor: runs one iteration of a Plan for real. Each stream gets one worker thread that
// runs its ops in listed order; an op starts when all its deps are done (events: one condition
// variable over done flags). The executor never re-decides anything: what an op does is the
// OpRunner's business, when it may run is the plan's. Every op's start and end (steady_clock ns
// since the iteration started) and every memory effect, charged to a PoolLedger at the real
// start/end time, go into a traces::Report with the simulator's schema (meta.source "runtime").
#pragma once

#include <string>

#include "runtime/memory/pool_ledger.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::rt {

// What an op does. Called from the op's stream worker; must be safe to call concurrently for ops
// the plan allows to overlap.
class OpRunner {
 public:
  virtual ~OpRunner() = default;
  virtual void run(const traces::Op& op) = 0;
};

class PlanExecutor {
 public:
  // `plan` must have passed traces::validate and outlive the executor.
  explicit PlanExecutor(const traces::Plan& plan);

  // Runs every op once. The first failure (an op throwing, or a pool going over capacity) stops
  // the iteration and is rethrown here after all workers have stopped.
  traces::Report run(OpRunner& runner, PoolLedger& ledger) const;

 private:
  const traces::Plan& plan_;
  std::vector<std::vector<int>> stream_ops_;  // per stream, op ids in listed order
};

}  // namespace protwin::rt
