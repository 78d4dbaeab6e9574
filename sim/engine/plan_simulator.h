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
//  - An op runs its cost's phases (hw::OpCost) in order: with a host phase, its host thread
//    launches it first; then at start its `at: start` memory effects apply, its stream phase's time
//    passes, then its link transfer (if any) runs, shared max-min fairly with the other transfers;
//    then its `at: end` effects apply and it ends.
//  - With contention rules or shared cores (contention.h), a stream phase's work goes slower while
//    an op of the rule's other streams runs, or while more threads than cores are runnable: its
//    end moves whenever its pace changes.
//  - Report: per-op start/end, per-stream busy time (sum of op durations), per-pool step curve
//    and peak (from plan.pools[i].initial). meta = {"source": "sim", "plan": plan.meta, "links"}.
// Deterministic: the same plan and cost model give a byte-identical report_to_string().
// Speed: every op is first compiled into a flat record (its cost, stream, waiting count, packed
// memory effects; successors as linked edges), so the event loop allocates nothing per op;
// `protwin bench engine` measures it (about 6 M ops/s on a 1M-op synthetic plan).
// Streaming (issue 21): ops may come from an OpSource that generates them while the run consumes
// them; the run reads each op once, when it takes it (keeping its cost, dependencies, id, kind
// and stream), holds it in a slot of a pool (found by id through a hash map) from then until it
// ends, and hands its record to a sink. Only generated, unfinished ops are held, whatever their
// ids. A plan's ops are all generated before the loop starts and sit in the slot of their id (no
// map, no release: its Report has every op).
// run() keeps all its state local, so one PlanSimulator (or several) may run in many threads at
// once, provided the CostModel's cost() is thread-safe (const and stateless, as RateCostModel).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hwmodels/cost_model.h"
#include "sim/engine/contention.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::sim {

// What one run cost (bench engine): the engine events it took and the thread CPU seconds of the
// event loop alone (without compiling the plan into arrays and building the Report).
struct RunStats {
  uint64_t events = 0;
  double event_loop_cpu_s = 0;
  uint64_t ops = 0;
  uint64_t peak_live_ops = 0;  // the most ops held at once (generated, not yet ended)
  // Streamed: the most ops one rank (the streams of one host thread, traces::host_of_stream: a 4D
  // plan's pipeline stage) held at once.
  uint64_t peak_live_ops_per_rank = 0;
  uint64_t peak_held_records = 0;  // streamed, records in id order: the most held back for it
};

// Ops produced as the run asks for them, in any order of ids (a plan's in id order).
// Contract that keeps a streamed run identical to the run of the whole plan: an op must be
// generated before the last of its dependencies (deps and the previous op of its stream) ends,
// and ops without dependencies before the loop starts; the ops of one stream, and of one host
// thread, are generated in id order. A dependency the run does not hold is an op that ended,
// unless generated() says it is yet to come (then the run waits for it by id). The run asks for
// ops while wants_more(), when a host thread has issued every op it holds (more_for_host), and
// tells the source when each op starts (starting()), so a source that knows its plan's structure
// generates just far enough ahead. A run that finds the contract broken (an op generated with
// nothing left to wait for, a stream's ops out of order) throws an internal error.
class OpSource {
 public:
  virtual ~OpSource() = default;
  // meta, streams and pools of the plan (its ops are not read).
  virtual const traces::Plan& header() const = 0;
  // The next op, or nullptr after the last. A streamed run reads it before it asks for the next
  // one; a plan's run keeps it until the run ends.
  virtual const traces::Op* next() = 0;
  // Whether the run must take more ops before it goes on.
  virtual bool wants_more() const = 0;
  // Whether op `id`, which the run does not hold, has been generated (and so has ended).
  virtual bool generated(int id) const = 0;
  // Host thread `host` (traces::host_of_stream) has issued every op it was given: true when the
  // source now wants (wants_more) to hand out more, false when it has none of that host's left.
  // By default the run takes the source's next ops until one is that host's.
  virtual bool more_for_host(const std::string& host) {
    (void)host;
    return false;
  }
  // Op `id` (on stream `stream`, an index into header().streams) starts now.
  virtual void starting(int id, int stream) { (void)id, (void)stream; }
  // Op `id` has ended and its record is out.
  virtual void release(int id, int stream) { (void)id, (void)stream; }
  // How many ops the run will hold at once, if known (sizes its arrays up front); 0: unknown.
  virtual size_t size_hint() const { return 0; }
};

// Every op of a Plan, all generated before the loop starts.
class PlanOpSource final : public OpSource {
 public:
  explicit PlanOpSource(const traces::Plan& plan) : plan_(plan) {}
  const traces::Plan& header() const override { return plan_; }
  const traces::Op* next() override { return next_ < plan_.ops.size() ? &plan_.ops[next_++] : nullptr; }
  bool wants_more() const override { return next_ < plan_.ops.size(); }
  bool generated(int id) const override { return static_cast<size_t>(id) < next_; }
  size_t size_hint() const override { return plan_.ops.size(); }

 private:
  const traces::Plan& plan_;
  size_t next_ = 0;
};

using OpRecordSink = std::function<void(const traces::OpRecord&)>;

class PlanSimulator {
 public:
  // With the cost model's contention rules (a measured profile's; none for most models), or `contention`.
  explicit PlanSimulator(const hw::CostModel& cost) : cost_(&cost), contention_(cost.contention()) {}
  PlanSimulator(const hw::CostModel& cost, std::vector<ContentionRule> contention, SharedCores cores = {})
      : cost_(&cost), contention_(std::move(contention)), cores_(std::move(cores)) {}

  // Throws protwin::Error naming the op for plans it cannot run: unknown stream or pool, bad dep
  // ids, a pool over capacity or below zero, a dependency cycle.
  // `stats`, when given, receives what the run cost (bench engine).
  traces::Report run(const traces::Plan& plan, RunStats* stats = nullptr) const;
  // The same for ops from `source`. With a sink, each op's record goes to it and the Report's ops
  // stay empty; without, they are in the Report as for a plan. Records go out in id order (held
  // until every op before has ended), or with `any_order` as each op ends.
  traces::Report run(OpSource& source, RunStats* stats = nullptr, const OpRecordSink& sink = nullptr,
                     bool any_order = false) const;

 private:
  const hw::CostModel* cost_;
  std::vector<ContentionRule> contention_;
  SharedCores cores_;
};

}  // namespace protwin::sim
