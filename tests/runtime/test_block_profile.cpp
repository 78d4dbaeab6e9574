// Whole blocks in the profile (issue 22). A step of a model this small is made of microsecond ATen
// calls, so what it costs is mostly the calls themselves: the runtime's ~50 per layer forward and
// ~100 per backward (views, reshapes, bias-gradient sums, gradient adds, head split and merge
// copies) against the dozen kernels the workload lists. Oracles: the step itself, measured (a block
// timed whole by the profile must predict it; the kernels' sum must not), and the runtime's code
// (which ATen calls a block makes).
#include "tests/runtime/torch_catch.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <ATen/ATen.h>

#include "runtime/executor/plan_replayer.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/memory/speed_throttle.h"
#include "runtime/train/interleaved.h"
#include "runtime/model/transformer.h"
#include "runtime/profile/aten_op_recorder.h"
#include "runtime/profile/block_profile.h"
#include "runtime/profile/profiler.h"
#include "tests/runtime/plan_fixtures.h"
#include "traces/block_signature.h"

namespace protwin::rt {
namespace {

// gpt2 with 32 hidden units, batch 2 x seq 16: every ATen call is a few microseconds.
traces::Plan tiny_resident_plan() {
  return testing::resident_plan(testing::eager_workload("gpt:hidden=32,layers=2,heads=2,vocab=256,max_positions=16", 2, 16));
}

struct Replay {
  const RuntimePlan rp;
  PlanReplayer replayer;
  at::Tensor tokens = at::randint(0, 256, {2, 16}, at::kLong), targets = at::randint(0, 256, {2, 16}, at::kLong);
  int64_t step_no = 0;
  explicit Replay(const traces::Plan& p) : rp(make_runtime_plan(p, "tiny.json")), replayer(rp, options()) {
    std::vector<at::Tensor> params = allocate_params(rp.model, at::TensorOptions().dtype(at::kFloat));
    init_params(rp.model, params, 0);
    replayer.load_params(params);
  }
  static ReplayOptions options() {
    ReplayOptions o;
    o.threads = ThreadSplit::choose(ThreadSplit::host_cores(), true);  // the profile's compute split
    return o;
  }
  StepResult step() { return replayer.step(tokens, targets, ++step_no); }
};

}  // namespace

TEST_CASE("a step of tiny ops: its blocks timed whole predict its compute ops, its kernels alone do not") {
  const traces::Plan plan = tiny_resident_plan();
  Replay r(plan);
  ProfileOptions po;
  po.min_seconds = 0.01;
  po.flush_bytes = 0;  // microsecond ops: a flush would be most of the time, and the step's caches are warm
  // On a shared machine a microsecond op is sometimes preempted for milliseconds; each side is taken
  // at its fastest (an op's minimum over 8 steps, a block's or kernel's minimum over its repeats),
  // what the op costs when nothing else runs.
  std::map<int, double> measured;
  for (int s = 0; s < 9; ++s) {
    const traces::Report rep = r.step().report;
    if (s == 0) continue;
    for (const traces::Op& op : plan.ops) {
      if (!traces::block_signature(plan, op)) continue;
      const double t = rep.ops[static_cast<size_t>(op.id)].end.seconds() - rep.ops[static_cast<size_t>(op.id)].start.seconds();
      measured[op.id] = measured.count(op.id) ? std::min(measured[op.id], t) : t;
    }
  }
  std::map<std::string, double> us;
  auto fastest = [&](const traces::OpSignature& s) {
    auto it = us.find(s.key());
    if (it == us.end()) it = us.emplace(s.key(), time_signature(s, po).min).first;
    return it->second * 1e-6;
  };
  double m = 0, b = 0, k = 0;
  for (const auto& [id, t] : measured) {
    const traces::Op& op = plan.ops[static_cast<size_t>(id)];
    m += t;
    b += fastest(*traces::block_signature(plan, op));
    for (const traces::Kernel& kn : plan.kernels_of(op)) {
      traces::OpSignature s = kn.sig;
      if (op.kind == traces::OpKind::kBackward && s.kind != "gemm") s.kind += "_backward";
      k += static_cast<double>(kn.count) * fastest(s);
    }
  }
  const double by_block = b / m, by_kernels = k / m;
  WARN("tiny gpt2 step's compute ops (each at its fastest): measured " << m * 1e3 << " ms; blocks timed whole "
       << b * 1e3 << " ms (x" << by_block << "); the listed kernels " << k * 1e3 << " ms (x" << by_kernels << ")");
  // The step also has the runtime's own work per plan op outside the block (binding the chunk
  // views, zeroing a chunk's gradient at its first backward; the executor's own part is about
  // 0.2 us, runtime_overhead.h): measured about 40 us per op here (2026-11-25: blocks x0.54-0.57,
  // kernels x0.32), which the blocks leave out; at calibrate's sizes (ops of 1-30 ms) it is under
  // 1 % of a step. Both sides swing with this VM's state from process to process: on 2026-11-26,
  // 12 runs of this test on an idle machine gave measured 0.76-1.21 ms and blocks x0.36-0.93
  // (kernels always below the blocks), so the floor is set under that spread, not at x0.45.
  CHECK(by_block > 0.3);
  CHECK(by_block < 1.25);
  CHECK(by_kernels < 0.6);
  CHECK(by_kernels < by_block);
}

TEST_CASE("the recorder puts every ATen call of a compute op inside the op's scope") {
  const traces::Plan plan = tiny_resident_plan();
  Replay r(plan);
  r.step();
  AtenOpRecorder rec;
  const traces::Report rep = r.step().report;
  const std::vector<AtenOpRecord> records = rec.take();
  std::map<int, const AtenOpRecord*> scopes;
  for (const AtenOpRecord& a : records)
    if (plan_op_of_scope(a.name) >= 0) scopes[plan_op_of_scope(a.name)] = &a;
  REQUIRE(scopes.size() == plan.ops.size());  // resident: compute ops and device Adam, one scope each
  for (const auto& [id, s] : scopes) {
    // The scope runs inside the executor's timing of the op.
    const traces::OpRecord& op = rep.ops[static_cast<size_t>(id)];
    CHECK(s->end_ns - s->start_ns <= op.end.ns - op.start.ns);
  }
  // A GPT-2 layer forward (runtime/model/transformer.cpp) makes four linears (qkv, proj, fc,
  // fcproj) directly; its backward four addmm_ (weight gradients) and four mm (input gradients).
  auto calls = [&](int id, const std::string& name) {
    const AtenOpRecord* s = scopes.at(id);
    return std::count_if(records.begin(), records.end(), [&](const AtenOpRecord& a) {
      return a.name == name && a.thread == s->thread && a.depth == s->depth + 1 && a.start_ns >= s->start_ns &&
             a.end_ns <= s->end_ns;
    });
  };
  for (const traces::Op& op : plan.ops) {
    if (!op.attrs.is_object() || op.attrs.value("block", std::string()) != "layer.0") continue;
    if (op.kind == traces::OpKind::kForward) CHECK(calls(op.id, "aten::linear") == 4);
    if (op.kind == traces::OpKind::kBackward) {
      CHECK(calls(op.id, "aten::addmm_") == 4);
      CHECK(calls(op.id, "aten::mm") == 4);
    }
  }
}

TEST_CASE("interleave's block probes: one run of every block after every step, at the device's speed then, the steps' memory untouched") {
  const traces::Plan plan = tiny_resident_plan();
  const std::vector<RuntimePlan> plans = {make_runtime_plan(plan, "tiny.json")};
  InterleaveOptions o;
  o.steps = 6;
  o.block_flush_bytes = 0;  // microsecond blocks: a flush would be most of their time
  const InterleavedResult alone = run_interleaved(plans, o);
  o.block_probes = plan_block_signatures(plan);
  REQUIRE(o.block_probes.size() == 6);  // embedding, layer, head; forward and backward
  // The device runs 3x slower from odd steps until the next step, and so do the block probes after
  // those steps (stretched as device ops, speed_throttle.h).
  o.before_step = [](int64_t i) { set_emulated_slowdown(i % 2 == 1 ? 3.0 : 1.0); };
  const InterleavedResult r = run_interleaved(plans, o);
  set_emulated_slowdown(1);
  REQUIRE(r.block_probes.size() == o.block_probes.size());
  double even = 0, odd = 0;
  for (const BlockProbeSeries& b : r.block_probes) {
    REQUIRE(b.us.size() == 6);
    for (size_t k = 0; k < b.us.size(); ++k) {
      CHECK(b.us[k] > 0);
      (k % 2 == 1 ? odd : even) += b.us[k];
    }
  }
  WARN("block probes' sum after the slowed steps / the others: " << odd / even << " (device slowdown 3)");
  CHECK(odd / even > 1.8);
  // The blocks allocate from their own caching allocator, not the emulated device's.
  CHECK(r.plans[0].peak_device_bytes == alone.plans[0].peak_device_bytes);
}

}  // namespace protwin::rt
