// simulate_4d with the ops generated as the simulation takes them (MegatronOpStream) against the
// whole plan's simulation. Oracles:
//  - the reference run: the same layout compiled into a whole Plan (compile_megatron_plan) and
//    simulated by PlanSimulator::run(plan) gives the same numbers (iteration, per-stream busy time
//    and op counts, bubbles, flops) over layouts with TP, CP, PP, VPP, recompute, uneven stages,
//    the workload switches and with and without host dispatch;
//  - memory: the most ops a streamed simulation holds at once (RunStats::peak_live_ops) stays
//    under a bound that does not depend on the micro-batches or DP (the ops of a few micro-batches
//    per stage, plus each stage's launch queue with host dispatch), and without host dispatch is
//    the same number, when the micro-batches grow 8x (8x the plan's ops) and when DP grows 8x;
//    the whole plan's run holds every op.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/parallel/simulate_4d.h"

using namespace protwin;
using namespace protwin::sim;

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

TEST_CASE("streamed 4D simulation holds the pipeline's in-flight ops: not more with 8x micro-batches or DP",
          "[parallel][stream][memory]") {
  for (bool host : {true, false}) {
    INFO((host ? "host dispatch" : "no host dispatch"));
    const hw::HardwareCostModel cost(machine(host));
    const MegatronOptions base = layout({1, 1, 4, 1}, 128);  // m = 128
    MegatronOptions more_mb = base;                            // m = 1024
    more_mb.gbs = 8 * base.gbs;
    MegatronOptions more_dp = more_mb;                         // DP 8 over 4 nodes, m = 128
    more_dp.sizes.dp = 8;
    const Simulate4dResult a = simulate(cost, base, false), b = simulate(cost, more_mb, false),
                           c = simulate(cost, more_dp, false);
    CHECK(b.ops >= 8 * a.ops - 8 * 20);  // 8x the plan (the tail does not grow)
    // What the window holds: the ops of a few micro-batches per stage and, with host dispatch,
    // each stage's host thread running ahead by up to its launch queue (1024 launches; a host
    // faster than its GPU gets there on a long enough plan).
    const int64_t per_stage_mb = a.ops / (base.sizes.pp * a.microbatches);
    const int64_t bound = base.sizes.pp * ((host ? 1024 : 0) + 4 * base.sizes.pp * per_stage_mb);
    for (const Simulate4dResult* r : {&a, &b, &c}) CHECK(r->peak_live_ops <= bound);
    CHECK(b.peak_live_ops * 10 < b.ops);
    if (!host) {  // then the window is the pipeline's alone: the same
      CHECK(b.peak_live_ops == a.peak_live_ops);
      CHECK(c.peak_live_ops == a.peak_live_ops);
    }
  }
}
