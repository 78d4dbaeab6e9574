// Test helper (not part of protwin): every ATen call inside the compute ops of a real training
// step, with its time and input shapes (AtenOpRecorder), as JSON lines on stdout; issue 22's
// measurement of the profile's per-op times against the same ops inside a step.
//   protwin_rt_op_breakdown PLAN.json STEPS LINK_GBPS [COMPUTE_THREADS] [ROUNDS]
// Records of the last step only. Each line: {"op": plan op id or -1, "name", "thread", "depth",
// "start_ns", "end_ns", "shapes"}. With ROUNDS > 0, instead: ROUNDS x (one step, then every kernel
// of the plan's compute ops timed as `protwin profile` times it), and one line per compute op with
// its measured times and the sum of its kernels' profile times per round.
#include <cstdlib>
#include <iostream>
#include <map>

#include <ATen/ATen.h>

#include "runtime/executor/plan_replayer.h"
#include "runtime/memory/host_allocator.h"
#include "runtime/model/transformer.h"
#include "runtime/profile/aten_op_recorder.h"
#include "runtime/profile/block_profile.h"
#include "runtime/profile/profiler.h"
#include "traces/op_signature.h"
#include "runtime/train/byte_dataset.h"
#include "nlohmann/json.hpp"

int main(int argc, char** argv) {
  using namespace protwin;
  protwin::runtime::keep_freed_host_memory(argv);
  if (argc < 4) {
    std::cerr << "usage: protwin_rt_op_breakdown PLAN.json STEPS LINK_GBPS [COMPUTE_THREADS]\n";
    return 2;
  }
  try {
    const rt::RuntimePlan rp = rt::load_runtime_plan(argv[1]);
    const int steps = std::atoi(argv[2]);
    rt::ReplayOptions ro;
    ro.threads = rt::ThreadSplit::choose(rt::ThreadSplit::host_cores(), rp.offloads, argc > 4 ? std::atoi(argv[4]) : 0);
    ro.link_gbps = std::atof(argv[3]);
    rt::PlanReplayer replayer(rp, ro);
    std::vector<at::Tensor> params = rt::allocate_params(rp.model, at::TensorOptions().dtype(at::kFloat));
    rt::init_params(rp.model, params, 0);
    replayer.load_params(params);
    rt::ByteDataset data(rt::kDefaultDataFile, rp.seq);
    int64_t pos = data.start_position(0);
    std::vector<rt::AtenOpRecord> records;
    const int rounds = argc > 5 ? std::atoi(argv[5]) : 0;
    if (rounds > 0) {
      rt::ProfileOptions po;
      po.min_seconds = 0.02;
      po.min_repeats = 1;
      po.max_repeats = 10;
      std::map<std::string, double> us;  // kernel key -> this round's time
      std::map<int, std::vector<double>> meas, pred, block;
      for (int r = 0; r < steps + rounds; ++r) {
        at::Tensor tokens, targets;
        data.batch(pos, rp.batch, tokens, targets);
        pos = data.next_position(pos, rp.batch);
        ro.threads.apply();
        const rt::StepResult s = replayer.step(tokens, targets, r + 1);
        if (r < steps) continue;
        rt::ThreadSplit::choose(rt::ThreadSplit::host_cores(), true).apply();
        us.clear();
        for (const traces::Op& op : rp.plan.ops) {
          if (op.stream != "compute" || op.kernels < 0) continue;
          const bool bwd = op.kind == traces::OpKind::kBackward;
          double sum = 0;
          for (const traces::Kernel& k : rp.plan.kernels_of(op)) {
            traces::OpSignature sig = k.sig;
            if (bwd && sig.kind != "gemm") sig.kind += "_backward";
            auto it = us.find(sig.key());
            if (it == us.end()) {
              double t = -1e9;  // a kernel the profiler has no benchmark for: the sum is negative
              try {
                t = rt::time_signature(sig, po).mean;
              } catch (const std::exception&) {
              }
              it = us.emplace(sig.key(), t).first;
            }
            sum += it->second * static_cast<double>(k.count);
          }
          pred[op.id].push_back(sum * 1e-3);
          const traces::OpSignature bs = *traces::block_signature(rp.plan, op);
          auto bt = us.find(bs.key());
          if (bt == us.end()) bt = us.emplace(bs.key(), rt::time_signature(bs, po).mean).first;
          block[op.id].push_back(bt->second * 1e-3);
          const auto& rec = s.report.ops[static_cast<size_t>(op.id)];
          meas[op.id].push_back((rec.end.ns - rec.start.ns) * 1e-6);
        }
      }
      for (const auto& [id, m] : meas) {
        const traces::Op& op = rp.plan.ops[static_cast<size_t>(id)];
        nlohmann::json j = {{"op", id}, {"kind", op.kind}, {"block", op.block}, {"measured_ms", m}, {"profile_ms", pred[id]}, {"block_ms", block[id]}};
        std::cout << j.dump() << "\n";
      }
      return 0;
    }
    for (int s = 0; s < steps; ++s) {
      at::Tensor tokens, targets;
      data.batch(pos, rp.batch, tokens, targets);
      pos = data.next_position(pos, rp.batch);
      if (s + 1 < steps) {
        replayer.step(tokens, targets, s + 1);
        continue;
      }
      rt::AtenOpRecorder rec(true);
      replayer.step(tokens, targets, s + 1);
      records = rec.take();
    }
    // Each record's plan op: the innermost plan_op scope enclosing it on its thread.
    std::vector<std::pair<uint64_t, rt::AtenOpRecord*>> scopes;
    for (auto& r : records)
      if (rt::plan_op_of_scope(r.name) >= 0) scopes.push_back({r.thread, &r});
    for (const auto& r : records) {
      int op = -1;
      for (const auto& [t, s] : scopes)
        if (t == r.thread && s->start_ns <= r.start_ns && r.end_ns <= s->end_ns) op = rt::plan_op_of_scope(s->name);
      nlohmann::json j = {{"op", op},         {"name", r.name},         {"thread", r.thread},
                          {"depth", r.depth}, {"start_ns", r.start_ns}, {"end_ns", r.end_ns},
                          {"shapes", r.shapes}};
      std::cout << j.dump() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "protwin_rt_op_breakdown: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
