// simulate_4d with the ops generated as the simulation takes them (MegatronOpStream) against the
// whole plan's simulation. Oracles:
//  - the reference run: the same layout compiled into a whole Plan (compile_megatron_plan) and
//    simulated by PlanSimulator::run(plan) gives the same numbers (iteration, per-stream busy time
//    and op counts, bubbles, flops) over layouts with TP, CP, PP, VPP, recompute, uneven stages,
//    the workload switches and with and without host dispatch;
//  - memory: the most ops a streamed simulation holds at once (RunStats::peak_live_ops) stays
//    under a bound that depends on neither the stages nor the micro-batches nor DP (the ops of two
//    micro-batches through the whole model, plus each stage's launch queue with host dispatch)
//    when one model is cut into 8x the stages, and run with 8x the micro-batches or DP; the whole
//    plan's run holds every op.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "hwmodels/hardware_cost_model.h"
#include "sim/parallel/search/simulate_4d.h"
#include "traces/chrome_trace.h"
#include "traces/file_io.h"
#include "traces/record_spool.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::parallel;

namespace {

ModelSpec small_llama() { return resolve_model("llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000"); }

hw::Machine machine(bool host_dispatch) {
  hw::Machine m = hw::load_machine("dgx-a100");
  m.host_dispatch.enabled = host_dispatch;
  return m;
}

Simulate4dResult simulate(const hw::HardwareCostModel& cost, const MegatronOptions& o, bool whole_plan) {
  Simulate4dConfig cfg;
  cfg.options = o;
  cfg.keep_report = whole_plan;
  return simulate_4d(small_llama(), cost, cfg);
}

MegatronOptions layout(ParallelSizes z, int64_t gbs) {
  MegatronOptions o;
  o.sizes = z;
  o.mbs = 1;
  o.gbs = gbs;
  o.seq = 1024;
  return o;
}

}  // namespace

TEST_CASE("streamed 4D simulation gives the whole plan's numbers", "[parallel][stream]") {
  std::vector<std::pair<std::string, MegatronOptions>> cases;
  cases.push_back({"PP 4, DP 2", layout({1, 1, 4, 2}, 32)});
  cases.push_back({"TP 2 CP 2 PP 2 DP 2, selective", layout({2, 2, 2, 2}, 16)});
  cases.back().second.recompute = Recompute::kSelective;
  cases.push_back({"TP 2 PP 4 VPP 2, full", layout({2, 1, 4, 1}, 16)});
  cases.back().second.vpp = 2;
  cases.back().second.recompute = Recompute::kFull;
  cases.push_back({"PP 4 uneven 1 + 3 + 3 + 1, no overlap", layout({1, 1, 4, 2}, 16)});
  cases.back().second.split = {1, 1};
  cases.back().second.overlap_grad_reduce = false;
  cases.back().second.overlap_param_gather = false;
  cases.push_back({"TP 2 PP 2 DP 2, megatron-lm", layout({2, 1, 2, 2}, 16)});
  cases.back().second.dtype = "fp16";
  apply_framework_preset(cases.back().second, "megatron-lm");
  cases.push_back({"PP 8 DP 1, no distributed optimizer", layout({1, 1, 8, 1}, 24)});
  cases.back().second.distributed_optimizer = false;
  // --framework megatron-lm (issue 18): 1/TP sends all-gathered over TP on receipt, each send a
  // host_sync, LocalDDP's main_grad passes (no overlapped grad reduce), the Float16Optimizer
  // step after its host_sync all-reduces; interleaved and with the bf16 step too.
  cases.push_back({"TP 2 PP 4 DP 2, megatron-lm fp16, LocalDDP", layout({2, 1, 4, 2}, 16)});
  cases.back().second.dtype = "fp16";
  cases.back().second.overlap_grad_reduce = false;
  apply_framework_preset(cases.back().second, "megatron-lm");
  cases.push_back({"TP 4 PP 2 VPP 2 DP 2, megatron-lm bf16, LocalDDP, full", layout({4, 1, 2, 2}, 16)});
  cases.back().second.vpp = 2;
  cases.back().second.recompute = Recompute::kFull;
  cases.back().second.overlap_grad_reduce = false;
  apply_framework_preset(cases.back().second, "megatron-lm");
  // --framework fsdp: per-micro-batch unit gathers (limit_all_gathers, BACKWARD_POST prefetch, the
  // last layer's gather after the forward) and reduce-scatters, composer's step after the norm.
  cases.push_back({"DP 8, fsdp", layout({1, 1, 1, 8}, 32)});
  apply_framework_preset(cases.back().second, "fsdp");
  cases.push_back({"DP 4, fsdp fp16, full", layout({1, 1, 1, 4}, 16)});
  cases.back().second.dtype = "fp16";
  cases.back().second.recompute = Recompute::kFull;
  apply_framework_preset(cases.back().second, "fsdp");
  for (bool host : {true, false}) {
    const hw::HardwareCostModel cost(machine(host));
    for (const auto& [name, o] : cases) {
      INFO(name << (host ? ", host dispatch" : ", no host dispatch"));
      const Simulate4dResult s = simulate(cost, o, false), w = simulate(cost, o, true);
      CHECK(s.ops == w.ops);
      CHECK(s.iteration_s == w.iteration_s);
      CHECK(s.tokens_per_s == w.tokens_per_s);
      CHECK(s.hw_tflops_per_gpu == w.hw_tflops_per_gpu);
      CHECK(s.bubble_fraction == w.bubble_fraction);
      CHECK(s.stage_bubble_fraction == w.stage_bubble_fraction);
      REQUIRE(s.streams.size() == w.streams.size());
      for (size_t i = 0; i < s.streams.size(); ++i) {
        CHECK(s.streams[i].name == w.streams[i].name);
        CHECK(s.streams[i].busy.ns == w.streams[i].busy.ns);
        CHECK(s.streams[i].ops == w.streams[i].ops);
      }
      CHECK(s.report.ops.empty());
      CHECK(w.peak_live_ops == w.ops);  // the whole plan's run holds every op
      CHECK(s.peak_live_ops < s.ops);
    }
  }
}

TEST_CASE("streamed 4D simulation holds each stage's in-flight ops: not more with 8x stages, micro-batches or DP",
          "[parallel][stream][memory]") {
  // One model (32 layers) cut into 2 ... 16 stages: what a simulation holds must not grow with the
  // stages (main's window in compile order held about p^2/2 pipeline tasks), nor with the
  // micro-batches or DP. The bound: the ops of two micro-batches through the whole model (every
  // stage's task and the next) and, with host dispatch, each stage's launch queue (1,024 launches
  // a host thread faster than its GPU runs ahead by).
  const ModelSpec model = resolve_model("llama:hidden=512,layers=32,heads=8,kv_heads=4,vocab=1000");
  struct Case {
    const char* name;
    ParallelSizes z;
    int64_t gbs;
    int vpp;
  };
  const Case cases[] = {{"PP 2, m 16", {1, 1, 2, 1}, 16, 1},          {"PP 16 (8x the stages), m 16", {1, 1, 16, 1}, 16, 1},
                        {"PP 2, m 128 (8x)", {1, 1, 2, 1}, 128, 1},  {"PP 16, m 128", {1, 1, 16, 1}, 128, 1},
                        {"PP 2 DP 8, m 16", {1, 1, 2, 8}, 128, 1},   {"PP 16 VPP 2, m 32", {1, 1, 16, 1}, 32, 2}};
  for (bool host : {true, false}) {
    const hw::HardwareCostModel cost(machine(host));
    int64_t per_microbatch_pp2 = 0;
    for (const Case& k : cases) {
      INFO(k.name << (host ? ", host dispatch" : ", no host dispatch"));
      MegatronOptions o = layout(k.z, k.gbs);
      o.vpp = k.vpp;
      Simulate4dConfig cfg;
      cfg.options = o;
      const Simulate4dResult r = simulate_4d(model, cost, cfg);
      const int64_t per_microbatch = r.ops / r.microbatches;  // every stage's forward and backward
      if (per_microbatch_pp2 == 0) per_microbatch_pp2 = per_microbatch;
      // Cutting the model into more stages adds only their sends.
      CHECK(per_microbatch <= per_microbatch_pp2 + 4 * k.z.pp * k.vpp);
      CHECK(r.peak_live_ops <= 2 * per_microbatch_pp2 + (host ? k.z.pp * 1024 : 0));
      if (!host) CHECK(r.peak_live_ops * 10 < r.ops);
    }
  }
}

namespace {

// Ops of one micro-batch's forward and backward on the busiest stage, from the whole plan: the
// difference between the plan with 2m and with m micro-batches (gathers, buckets and the tail
// cancel), counted per stage (streams "stage<s>.*"), over m.
int64_t stage_ops_per_microbatch(const ModelSpec& model, MegatronOptions o, int64_t m) {
  const hw::Machine a100 = machine(false);
  std::vector<int64_t> per_stage(static_cast<size_t>(o.sizes.pp), 0);
  for (int64_t k : {1, 2}) {
    o.gbs = k * m * o.mbs * o.sizes.dp;
    const ParallelPlan plan = compile_megatron_plan(model, o, place_groups(o.sizes, a100.gpu.count, nodes_for_layout(o.sizes, a100.gpu.count, 0, a100.name)));
    for (const auto& op : plan.plan.ops) {
      const size_t dot = op.stream.find('.');
      per_stage[static_cast<size_t>(std::stoi(op.stream.substr(5, dot - 5)))] += k == 1 ? -1 : 1;
    }
  }
  return *std::max_element(per_stage.begin(), per_stage.end()) / m;
}

}  // namespace

TEST_CASE("streamed 4D simulation: a stage holds its task, the next and its launch queue, whatever the stages",
          "[parallel][stream][memory]") {
  // Two layers per stage, PP 2 ... 16 (the model grows with the stages, so the whole pipeline
  // holds more, but no stage may): the most ops one stage's rank holds at once
  // (RunStats::peak_live_ops_per_rank) is at most its running task and the next one (two
  // micro-batches' forward and backward on the busiest stage, counted in the whole plan), plus,
  // with host dispatch, the launch queue its host thread runs ahead by (the machine's
  // launch_queue_depth). Without host dispatch it is the same at every PP and every micro-batch
  // count; the whole run holds at most PP times it. Session 9's window in compile order held about
  // p^2/2 tasks.
  for (bool host : {true, false}) {
    const hw::HardwareCostModel cost(machine(host));
    const int64_t queue = host ? cost.launch_queue_depth() : 0;
    int64_t first_per_stage = 0;
    for (int64_t pp : {2, 4, 8, 16}) {
      for (int64_t m : {16, 64}) {
        INFO("PP " << pp << ", " << m << " micro-batches" << (host ? ", host dispatch" : ", no host dispatch"));
        const ModelSpec model = resolve_model("llama:hidden=512,layers=" + std::to_string(2 * pp) +
                                              ",heads=8,kv_heads=4,vocab=1000");
        const MegatronOptions o = layout({2, 1, pp, 1}, m);
        Simulate4dConfig cfg;
        cfg.options = o;
        const Simulate4dResult r = simulate_4d(model, cost, cfg);
        const int64_t stage_mb = stage_ops_per_microbatch(model, o, 8);
        INFO("one stage's micro-batch " << stage_mb << " ops; held per stage " << r.peak_live_ops_per_stage
                                        << ", in all " << r.peak_live_ops << " of " << r.ops);
        CHECK(r.peak_live_ops_per_stage > 0);
        CHECK(r.peak_live_ops_per_stage <= 2 * stage_mb + queue);
        CHECK(r.peak_live_ops <= pp * r.peak_live_ops_per_stage);
        // Without host dispatch exactly the same at every PP and micro-batch count; with it, how
        // far the host runs ahead (up to the queue) depends on its launch and kernel times.
        if (first_per_stage == 0) first_per_stage = r.peak_live_ops_per_stage;
        if (!host) CHECK(r.peak_live_ops_per_stage == first_per_stage);
      }
    }
  }
}

TEST_CASE("simulate-4d's streamed outputs: plan, report and trace byte-identical to the whole plan's", "[parallel][stream]") {
  // Oracle: the whole plan compiled (compile_megatron_plan, every op described) and its
  // whole Report, written by write_plan / write_report / write_chrome_trace, against the plan
  // written as a second stream generates it and the report and trace written from the records the
  // streamed simulation handed out as ops ended (kept in a RecordSpool, read back in id order).
  const std::string dir = std::string(PROTWIN_BINARY_DIR) + "/tests/sim/parallel/";
  const hw::HardwareCostModel cost(machine(true));
  std::vector<MegatronOptions> layouts = {layout({2, 1, 4, 2}, 16), layout({1, 1, 4, 1}, 16), layout({1, 1, 1, 4}, 16)};
  layouts[1].vpp = 2;
  // CP's ring, uneven first/last stages (1 + 3 + 3 + 1 layers), selective recompute.
  layouts.push_back(layout({1, 2, 4, 2}, 16));
  layouts.back().split = {1, 1};
  layouts.back().recompute = Recompute::kSelective;
  apply_framework_preset(layouts[0], "megatron-lm");  // host_sync sends, the framework's step
  // FSDP with its own passes: their kernel sets (the root unit's too) must be in the plan file's
  // header before the first op.
  apply_framework_preset(layouts[2], "fsdp");
  REQUIRE(layouts[2].fsdp_passes);
  for (const MegatronOptions& o : layouts) {
    Simulate4dConfig whole;
    whole.options = o;
    whole.keep_report = true;
    ParallelPlan plan;
    MegatronOptions described = o;
    described.describe_ops = true;
    whole.options = described;
    const Simulate4dResult w = simulate_4d(small_llama(), cost, whole, &plan);
    traces::write_plan(plan.plan, dir + "whole.plan.json");
    traces::write_report(w.report, dir + "whole.report.json");
    traces::write_chrome_trace(w.report, dir + "whole.trace.json");

    Simulate4dConfig streamed;
    streamed.options = o;
    streamed.plan_path = dir + "streamed.plan.json";
    traces::RecordSpool records;
    streamed.records = [&](const traces::OpRecord& r) { records.add(r); };
    const Simulate4dResult s = simulate_4d(small_llama(), cost, streamed);
    const traces::OpRecordVisitor ops = [&](const std::function<void(const traces::OpRecord&)>& f) {
      records.for_each(f);
    };
    traces::write_report(s.report, ops, dir + "streamed.report.json");
    traces::write_chrome_trace(s.report, ops, dir + "streamed.trace.json");
    CHECK(records.size() == static_cast<uint64_t>(w.ops));
    CHECK(s.report.ops.empty());
    for (const char* what : {"plan", "report", "trace"}) {
      INFO(what);
      const std::string a = traces::read_file(dir + "whole." + what + ".json");
      CHECK(a.size() > 1000);
      CHECK(traces::read_file(dir + "streamed." + what + ".json") == a);
      std::remove((dir + "whole." + what + ".json").c_str());
      std::remove((dir + "streamed." + what + ".json").c_str());
    }
  }
}
