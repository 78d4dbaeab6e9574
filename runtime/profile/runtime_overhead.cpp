#include "runtime/profile/runtime_overhead.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include "runtime/executor/plan_executor.h"
#include "runtime/executor/plan_replayer.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/model/transformer.h"
#include "runtime/memory/copy_engine.h"
#include "runtime/memory/pool_ledger.h"
#include "runtime/profile/aten_op_recorder.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {

// `n` compute ops, each after the one before, on the stream names of a runtime plan.
traces::Plan chain_plan(int n) {
  traces::Plan p;
  p.pools = {{"gpu", Bytes(int64_t{1} << 30), Bytes(0)}};
  for (const char* s : {"compute", "h2d", "d2h", "collective", "cpu_optim"}) p.streams.push_back({s, {}});
  for (int i = 0; i < n; ++i) {
    traces::Op op;
    op.id = i;
    op.kind = traces::OpKind::kForward;
    op.stream = "compute";
    if (i > 0) op.deps = {i - 1};
    p.ops.push_back(op);
  }
  return p;
}

// What PlanReplayer::run does around an op's semantics.
class EmptyOps : public OpRunner {
 public:
  EmptyOps(EmulatedDevice& device, const std::function<void()>& body) : device_(device), body_(body) {}
  void run(const traces::Op& op) override {
    at::RecordFunction scope(at::RecordScope::USER_SCOPE);
    if (scope.isActive()) scope.before(plan_op_scope(op.id));
    device_.run_op(op, [&] {
      if (body_) body_();
    });
  }

 private:
  EmulatedDevice& device_;
  const std::function<void()>& body_;
};

double fastest_step_s(int n, const RuntimeOverheadOptions& o) {
  const traces::Plan plan = chain_plan(n);
  const PlanExecutor executor(plan);
  EmulatedDevice device(0, 1);
  EmptyOps runner(device, o.op_body);
  std::vector<double> s;
  for (int r = 0; r <= o.repeats; ++r) {  // the first step warms up, untimed
    const auto t0 = std::chrono::steady_clock::now();
    device.begin_iteration();
    PoolLedger ledger(plan.pools);
    traces::Report rep = executor.run(runner, ledger);
    device.finish_iteration(rep);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) s.push_back(dt);
  }
  return *std::min_element(s.begin(), s.end());
}

}  // namespace

RuntimeOverhead measure_runtime_overhead(const RuntimeOverheadOptions& o) {
  PROTWIN_CHECK(o.repeats >= 1 && o.short_ops >= 1 && o.long_ops > o.short_ops,
                "runtime overhead: expected repeats >= 1 and 1 <= short_ops < long_ops");
  const double t_short = fastest_step_s(o.short_ops, o), t_long = fastest_step_s(o.long_ops, o);
  RuntimeOverhead r;
  r.op_us = std::max(0.0, (t_long - t_short) / (o.long_ops - o.short_ops) * 1e6);
  r.step_us = std::max(0.0, t_short * 1e6 - o.short_ops * r.op_us);
  return r;
}

double replayer_step_us(const RuntimePlan& rp, double link_gbps, int steps) {
  PROTWIN_CHECK(steps >= 1, "runtime overhead: expected steps >= 1");
  ReplayOptions ro;
  ro.threads = ThreadSplit::choose(ThreadSplit::host_cores(), rp.offloads);
  ro.link_gbps = link_gbps;
  ro.threads.apply();
  PlanReplayer replayer(rp, ro);
  replayer.load_params(allocate_params(rp.model, at::TensorOptions().dtype(at::kFloat)));
  const at::Tensor tokens = at::randint(0, rp.model.vocab, {rp.batch, rp.seq}, at::kLong);
  const at::Tensor targets = at::randint(0, rp.model.vocab, {rp.batch, rp.seq}, at::kLong);
  double best = std::numeric_limits<double>::infinity();
  for (int s = 0; s <= steps; ++s) {  // the first step warms up, untimed
    const auto t0 = std::chrono::steady_clock::now();
    const StepResult r = replayer.step(tokens, targets, s + 1);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t first = r.report.iteration.ns;
    for (const traces::OpRecord& op : r.report.ops) first = std::min(first, op.start.ns);
    if (s > 0) best = std::min(best, wall - static_cast<double>(r.report.iteration.ns - first) * 1e-9);
  }
  return std::max(0.0, best * 1e6);
}

}  // namespace protwin::rt
