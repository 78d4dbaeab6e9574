// The Megatron-style 4D plan compiler. Oracles:
//  - the 1F1B bubble (p-1)/(m+p-1) and the interleaved (p-1)/(vm+p-1), with a cost model that
//    gives every decoder layer the same forward and backward time and makes everything else free
//    (equal stage times, free communication: the closed forms hold exactly);
//  - TP = PP = CP = 1 is the data-parallel plan: m micro-batches of forward + backward, then the
//    gradient reduce-scatter, the sharded Adam and the parameter all-gather, each priced by the
//    hardware cost model's own functions (kernel_time, collective_time, device_adam_seconds);
//  - the CP ring's closed form (c steps of attention, c-1 exchanges, double buffered);
//  - the template-priced plan and the self-contained plan priced by HardwareCostModel agree op
//    by op; plans validate (DAG, streams).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "hwmodels/hardware_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/parallel/compiler/megatron_compiler.h"
#include "sim/parallel/search/search_4d.h"
#include "sim/parallel/search/simulate_4d.h"
#include "sim/workload/workload.h"
#include "traces/error.h"
#include "traces/report.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::parallel;

namespace {

// A small Llama: 8 layers, GQA, untied head.
ModelSpec small_llama() { return resolve_model("llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000"); }

MegatronOptions options(ParallelSizes z, int64_t mbs, int64_t gbs, int64_t seq) {
  MegatronOptions o;
  o.sizes = z;
  o.mbs = mbs;
  o.gbs = gbs;
  o.seq = seq;
  return o;
}

std::string attr(const traces::Op& op, const char* key) {
  return op.attrs.is_object() && op.attrs.contains(key) && op.attrs[key].is_string()
             ? op.attrs[key].get<std::string>() : std::string();
}

// Decoder-layer compute ops cost fixed times; everything else (embedding, head, collectives,
// sends, the optimizer) is free.
class LayerCostModel : public hw::CostModel {
 public:
  LayerCostModel(int64_t fwd_ns, int64_t bwd_ns) : fwd_(fwd_ns), bwd_(bwd_ns) {}
  hw::OpCost cost(const traces::Op& op, const traces::Plan&) const override {
    hw::OpCost c;
    if (attr(op, "block").rfind("layer.", 0) != 0) return c;
    if (op.kind == traces::OpKind::kForward || op.kind == traces::OpKind::kRecompute) c.add(hw::on_device(SimTime(fwd_)));
    if (op.kind == traces::OpKind::kBackward) c.add(hw::on_device(SimTime(bwd_)));
    return c;
  }

 private:
  int64_t fwd_, bwd_;
};

struct Simulated {
  ParallelPlan plan;
  traces::Report report;
  Simulate4dResult result;
};

Simulated run(const ModelSpec& m, const MegatronOptions& o, const hw::CostModel& cost, int64_t gpus_per_node = 8) {
  Simulated s;
  const int64_t world = o.sizes.world();
  const int64_t nodes = world <= gpus_per_node ? 1 : world / gpus_per_node;
  MegatronOptions described = o;  // the cost models below tell layers by attrs.block
  described.describe_ops = true;
  s.plan = compile_megatron_plan(m, described, place_groups(o.sizes, gpus_per_node, nodes));
  s.report = PlanSimulator(cost).run(s.plan.plan);
  measure_4d(s.plan, s.report, s.result);
  return s;
}

int64_t ns(double seconds) { return from_seconds(seconds).ns; }

// One op's time as HardwareCostModel prices a list of kernels.
int64_t kernels_ns(const hw::HardwareCostModel& c, const std::vector<traces::Kernel>& ks, bool backward) {
  double t = 0;
  for (const auto& k : ks) t += static_cast<double>(k.count) * c.kernel_time(k, backward).seconds;
  return ns(t);
}

}  // namespace

namespace {
// The machine without its host thread (the device timeline's closed forms).
hw::Machine without_host_dispatch(hw::Machine m) {
  m.host_dispatch.enabled = false;
  return m;
}
}  // namespace

TEST_CASE("1F1B with equal stages and free communication: bubble = (p-1)/(m+p-1)", "[parallel][closed-form]") {
  const ModelSpec m = small_llama();
  const LayerCostModel cost(1000, 2000);
  struct Case {
    int64_t p, m, dp;
    Recompute rc;
  };
  for (const Case c : {Case{2, 4, 1, Recompute::kNone}, Case{4, 8, 1, Recompute::kNone}, Case{4, 4, 2, Recompute::kNone},
                       Case{8, 16, 1, Recompute::kNone}, Case{4, 2, 1, Recompute::kNone}, Case{8, 3, 1, Recompute::kFull},
                       Case{2, 32, 4, Recompute::kSelective}}) {
    MegatronOptions o = options({1, 1, c.p, c.dp}, 1, c.m * c.dp, 256);
    o.recompute = c.rc;
    const Simulated s = run(m, o, cost);
    INFO("p " << c.p << " m " << c.m << " dp " << c.dp);
    REQUIRE(s.plan.microbatches == c.m);
    const double expected = static_cast<double>(c.p - 1) / static_cast<double>(c.m + c.p - 1);
    CHECK(s.result.bubble_fraction == Approx(expected).epsilon(1e-9));
    for (double b : s.result.stage_bubble_fraction) CHECK(b == Approx(expected).epsilon(1e-9));
    // The iteration is the pipeline: (m + p - 1) slots of one micro-batch's work on a stage.
    const int64_t per_stage = m.layers / c.p;
    const int64_t slot = per_stage * (c.rc == Recompute::kFull ? 2 * 1000 + 2000 : 1000 + 2000);
    if (c.rc != Recompute::kSelective) CHECK(s.report.iteration.ns == (c.m + c.p - 1) * slot);
    const traces::StreamRecord* st0 = s.report.stream("stage0.compute");
    REQUIRE(st0);
    CHECK(s.report.iteration.ns * c.m == (c.m + c.p - 1) * st0->busy.ns);
  }
}

TEST_CASE("interleaved 1F1B with equal stages and free communication: bubble = (p-1)/(vm+p-1)", "[parallel][closed-form]") {
  const ModelSpec m = small_llama();
  const LayerCostModel cost(1000, 2000);
  for (const auto& [p, v, mb] : {std::tuple<int64_t, int, int64_t>{2, 2, 4}, {4, 2, 8}, {4, 2, 4}, {2, 4, 6}}) {
    MegatronOptions o = options({1, 1, p, 1}, 1, mb, 256);
    o.vpp = v;
    const Simulated s = run(m, o, cost);
    INFO("p " << p << " v " << v << " m " << mb);
    const double expected = static_cast<double>(p - 1) / static_cast<double>(v * mb + p - 1);
    CHECK(s.result.bubble_fraction == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("TP = PP = CP = 1 is the data-parallel plan: m (F + B) + reduce-scatter + Adam + all-gather", "[parallel][closed-form]") {
  const ModelSpec m = small_llama();
  // The device timeline's closed form: no host thread (DESIGN §4.1 has its own tests).
  const hw::HardwareCostModel cost(without_host_dispatch(hw::load_machine("dgx-a100")));
  const int64_t d = 4, mbs = 2, gbs = 24, seq = 512;
  // The workload's blocks priced one op per block and phase, as the cost model prices an op.
  WorkloadOptions wo;
  wo.batch = mbs;
  wo.seq = seq;
  wo.dtype = "bf16";
  wo.fused_projections = true;  // as the Megatron compiler builds it
  const Workload w = build_workload(m, wo);
  int64_t fb = 0;
  for (const auto& b : w.blocks) fb += kernels_ns(cost, b.forward, false) + kernels_ns(cost, b.backward, true);
  const int64_t micro = gbs / (mbs * d);
  const double params = static_cast<double>(m.parameter_count());
  const int64_t adam = ns(cost.device_adam_seconds(std::ceil(params / d)));
  const int64_t rs = ns(cost.collective_time(hw::CollectiveKind::kReduceScatter, params * 4, d, d).seconds);
  const int64_t ag = ns(cost.collective_time(hw::CollectiveKind::kAllGather, params * 2, d, d).seconds);

  MegatronOptions o = options({1, 1, 1, d}, mbs, gbs, seq);
  o.bucket_params = int64_t{1} << 50;  // one bucket
  o.overlap_grad_reduce = false;
  o.overlap_param_gather = false;
  const Simulated s = run(m, o, cost);
  CHECK(s.report.iteration.ns == micro * fb + rs + adam + ag);
  CHECK(s.result.bubble_fraction == 0);

  // One GPU: no collective at all.
  const Simulated one = run(m, options({1, 1, 1, 1}, mbs, micro * mbs, seq), cost);
  CHECK(one.report.iteration.ns == micro * fb + ns(cost.device_adam_seconds(params)));

  // Overlapped buckets hide part of the communication, never add any.
  MegatronOptions ov = options({1, 1, 1, d}, mbs, gbs, seq);
  ov.bucket_params = 3000000;
  const Simulated over = run(m, ov, cost);
  CHECK(over.report.iteration.ns > micro * fb + adam);
  CHECK(over.report.iteration.ns < micro * fb + rs + adam + ag);
}

TEST_CASE("the CP ring: c attention steps behind c-1 double-buffered K/V exchanges", "[parallel][closed-form]") {
  // Only ring steps and ring exchanges cost: step A (2A backward), exchange k ns per byte.
  class RingCost : public hw::CostModel {
   public:
    RingCost(int64_t a, double ns_per_byte) : a_(a), k_(ns_per_byte) {}
    hw::OpCost cost(const traces::Op& op, const traces::Plan&) const override {
      hw::OpCost c;
      if (op.kind == traces::OpKind::kSendRecv && attr(op, "what").rfind("cp ring", 0) == 0)
        c.add(hw::on_device(SimTime(std::llround(k_ * static_cast<double>(op.work.bytes)))));
      else if (attr(op, "part") == "attention ring step")
        c.add(hw::on_device(SimTime(op.kind == traces::OpKind::kBackward ? 2 * a_ : a_)));
      return c;
    }

   private:
    int64_t a_;
    double k_;
  };
  const ModelSpec m = small_llama();
  const int64_t seq = 1024;
  for (const int64_t c : {2, 4}) {
    const int64_t block = 2 * 2 * (seq / c) * m.kv_dim();  // K and V, bf16, s/c tokens
    for (const int64_t r : {300, 3000}) {  // an exchange shorter, then longer than a step
      const int64_t a = 1000;
      const RingCost cost(a, static_cast<double>(r) / static_cast<double>(block));
      const Simulated s = run(m, options({1, c, 1, 1}, 1, 1, seq), cost);
      // Forward: steps back to back unless the exchange is slower; backward the same at 2x,
      // then the last dK/dV goes home before the layer's Q/K/V backward.
      const int64_t fwd = r <= a ? c * a : (c - 1) * r + a;
      const int64_t bwd = (r <= a ? c * 2 * a : (c - 1) * 2 * r + 2 * a) + r;
      INFO("c " << c << " r " << r);
      CHECK(s.report.iteration.ns == m.layers * (fwd + bwd));
    }
  }
}

TEST_CASE("described ops and the plan read back from JSON price as the lean ops, plans validate", "[parallel][plan]") {
  const ModelSpec m = small_llama();
  const hw::HardwareCostModel cost(hw::load_machine("dgx-a100"));
  struct Case {
    ParallelSizes z;
    int vpp;
    Recompute rc;
  };
  for (const Case c : {Case{{2, 2, 2, 2}, 1, Recompute::kNone}, Case{{4, 1, 2, 4}, 2, Recompute::kSelective},
                       Case{{2, 4, 1, 2}, 1, Recompute::kFull}}) {
    MegatronOptions o = options(c.z, 1, 8 * c.z.dp, 1024);
    o.vpp = c.vpp;
    o.recompute = c.rc;
    const Simulated described = run(m, o, cost);
    const ParallelPlan& full = described.plan;
    const int64_t world = c.z.world(), nodes = world <= 8 ? 1 : world / 8;
    const ParallelPlan lean = compile_megatron_plan(m, o, place_groups(c.z, 8, nodes));
    REQUIRE_NOTHROW(traces::validate(lean.plan));
    REQUIRE(full.plan.ops.size() == lean.plan.ops.size());
    const traces::Report direct = PlanSimulator(cost).run(lean.plan);
    CHECK(traces::report_to_string(direct) == traces::report_to_string(described.report));
    const traces::Plan read = traces::plan_from_json(traces::plan_to_json(full.plan), "round trip");
    CHECK(read.kernel_sets == full.plan.kernel_sets);
    CHECK(traces::report_to_string(PlanSimulator(cost).run(read)) == traces::report_to_string(described.report));
    // Every collective names its group's placement.
    for (const auto& t : full.plan.ops)
      if (t.kind == traces::OpKind::kAllGather || t.kind == traces::OpKind::kReduceScatter || t.kind == traces::OpKind::kAllReduce || t.kind == traces::OpKind::kSendRecv) {
        CHECK(t.group.ranks >= 2);
        CHECK(t.group.ranks_per_node >= 1);
        CHECK(t.work.bytes > 0);
      }
  }
}

TEST_CASE("flops: model flops are 6P + 12Lhs per token for GPT, and the stages' ops add up to them", "[parallel][flops]") {
  // GPT-2 style: Narayanan et al.'s 72 h^2 L (1 + s/6h + V/12Lh) per token without recompute.
  const ModelSpec gpt = resolve_model("gpt:hidden=1024,layers=24,heads=16,vocab=50257");
  const double h = 1024, L = 24, s = 1024, V = 50257;
  CHECK(model_flops_per_token(gpt, 1024, "bf16") == Approx(72 * h * h * L * (1 + s / (6 * h) + V / (12 * L * h))));
  // The simulated ranks' GEMM + attention flops, times their group sizes, are the model flops
  // of the global batch (V divisible by TP here).
  const ModelSpec m = small_llama();
  const hw::HardwareCostModel cost(hw::load_machine("dgx-a100"));
  const ParallelSizes z{2, 2, 2, 2};
  const Simulated sim = run(m, options(z, 2, 16, 512), cost);
  double executed = 0;
  for (const auto& st : sim.plan.stages) executed += st.matmul_flops;
  CHECK(executed * z.tp * z.cp * z.dp == Approx(model_flops_per_token(m, 512, "bf16") * 16 * 512).epsilon(1e-9));
  CHECK(sim.result.hw_tflops_per_gpu == Approx(sim.result.tflops_per_gpu));
  // Full recompute runs every layer's forward twice: 4/3 of the layers' flops.
  MegatronOptions full = options(z, 2, 16, 512);
  full.recompute = Recompute::kFull;
  const Simulated re = run(m, full, cost);
  double again = 0;
  for (const auto& st : re.plan.stages) again += st.recompute_matmul_flops;
  WorkloadOptions wo;
  wo.batch = 2;
  wo.seq = 512;
  wo.dtype = "bf16";
  wo.tp = 2;
  wo.cp = 2;
  wo.fused_projections = true;
  const Workload w = build_workload(m, wo);
  double layer_fwd = 0;
  for (const auto& k : w.layer(0).forward)
    if (k.sig.kind == "gemm" || k.sig.kind == "flash_attention") layer_fwd += k.flops * static_cast<double>(k.count);
  CHECK(again == Approx(layer_fwd * static_cast<double>(m.layers * sim.plan.microbatches)).epsilon(1e-9));
}

TEST_CASE("simulate_4d checks the layout with messages naming the flags", "[parallel][errors]") {
  const hw::HardwareCostModel cost(hw::load_machine("dgx-a100"));
  const ModelSpec m = find_model("llama3.1-8b");
  auto err = [&](ParallelSizes z, int64_t mbs, int64_t gbs, int64_t seq, int vpp = 1, int64_t nodes = 0) {
    Simulate4dConfig c;
    c.options = options(z, mbs, gbs, seq);
    c.options.vpp = vpp;
    c.nodes = nodes;
    try {
      simulate_4d(m, cost, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(err({2, 1, 1, 6}, 1, 12, 8192) ==
        "--tp/--cp/--pp/--dp: TP*CP*PP*DP = 2*1*1*6 = 12 GPUs do not fill whole nodes of 8 GPUs (machine dgx-a100)");
  CHECK(err({2, 1, 1, 8}, 1, 16, 8192, 1, 1) ==
        "--nodes 1: too few: 1 node(s) of 8 GPUs (machine dgx-a100) hold 8 GPUs, but TP*CP*PP*DP = 2*1*1*8 = 16 GPUs");
  CHECK(err({1, 1, 1, 8}, 1, 12, 8192) ==
        "--gbs 12: global batch 12 is not divisible by MBS*DP 8 (MBS 1, DP 8)");
  CHECK(err({1, 1, 4, 2}, 1, 16, 8192, 3) == "--vpp 3: layers 32 are not divisible by PP*VPP = 4*3 = 12");
  CHECK(err({3, 1, 1, 1}, 1, 1, 8192) == "--tp 3: heads 32 is not divisible by TP 3");
  CHECK(err({16, 1, 1, 1}, 1, 1, 8192) == "--tp 16: KV heads 8 is not divisible by TP 16");
  CHECK(err({1, 2, 1, 4}, 1, 4, 8190) == "--cp 2: sequence 8190 is not divisible by 2*CP 4");
  CHECK(err({1, 1, 1, 8}, 1, 16, 8192, 2) == "--vpp 2: the interleaved schedule needs --pp > 1");
  CHECK(err({1, 1, 4, 2}, 1, 12, 8192, 2) ==
        "--vpp 2: the interleaved schedule needs the micro-batches (6) to be a multiple of PP 4");
}

TEST_CASE("simulate_4d refuses what it cannot simulate, naming the flag at fault", "[parallel][errors]") {
  const hw::HardwareCostModel cost(hw::load_machine("dgx-a100"));
  const ModelSpec m = find_model("llama3.1-8b");
  auto err = [&](ParallelSizes z, int64_t mbs, int64_t gbs, int64_t seq) {
    Simulate4dConfig c;
    c.options = options(z, mbs, gbs, seq);
    try {
      simulate_4d(m, cost, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // PP alone does not divide the layers: --pp, not "--vpp 1".
  CHECK(err({1, 1, 64, 1}, 1, 8, 2048) == "--pp 64: layers 32 are not divisible by PP 64");
  // A world that overflows int64 is named by its sizes, not as a negative --gpus.
  CHECK(err({2, 1, 1, int64_t{1} << 62}, 1, 8, 2048) ==
        "--tp/--cp/--pp/--dp: TP*CP*PP*DP = 2*1*1*4611686018427387904 is more than 16777216 GPUs");
  // Tokens per iteration bound the simulated time; micro-batches bound the plan (it ran out of memory).
  CHECK(err({1, 1, 1, 1}, 1, int64_t{1} << 21, 1024) ==
        "--gbs 2097152: GBS*seq = 2097152*1024 tokens per iteration, more than the 1073741824 protwin simulates; "
        "lower --gbs or --seq");
  CHECK(err({1, 1, 1, 1}, 1, int64_t{1} << 20, 1024).rfind(
            "--gbs 1048576: 1048576 micro-batches (GBS/(MBS*DP)) make a plan of about ", 0) == 0);
  CHECK_NOTHROW(check_tokens_per_iteration(1024, 1 << 20));
  CHECK_THROWS_WITH(check_tokens_per_iteration(1, int64_t{1} << 31),
                    "--seq 2147483648: must be from 1 to 1073741824");
}

TEST_CASE("search_4d refuses an iteration too large up front, and survives refused layouts", "[parallel][errors]") {
  const hw::HardwareCostModel cost(hw::load_machine("dgx-a100"));
  Search4dOptions o;
  o.nodes = 1;
  o.base.seq = 2048;
  o.base.gbs = int64_t{1} << 40;
  CHECK_THROWS_WITH(search_4d(find_model("llama3.1-8b"), cost, o),
                    "--gbs 1099511627776: GBS*seq = 1099511627776*2048 tokens per iteration, more than the "
                    "1073741824 protwin simulates; lower --gbs or --seq");
  // Layouts whose plans would be too long are refused one by one, with the reason.
  o.base.gbs = int64_t{1} << 19;
  o.threads = 2;
  const Search4dResult r = search_4d(find_model("llama3.1-8b"), cost, o);
  CHECK(r.failed > 0);
  for (const auto& row : r.ranked)
    if (!row.simulated) CHECK(row.failure.rfind("--gbs 524288: ", 0) == 0);
}

TEST_CASE("uneven first/last stages: layers per stage, stage busy time m L_s (F + B), the even split unchanged",
          "[parallel][closed-form][stages]") {
  // 10 layers: the uneven splits put L_s layers on stage s; with only decoder layers costing time,
  // stage s's compute stream is busy m L_s (F + B) (+ F L_s m with full recompute).
  const ModelSpec m = resolve_model("llama:hidden=512,layers=10,heads=8,kv_heads=4,vocab=1000");
  const LayerCostModel cost(1000, 2000);
  struct Case {
    StageSplit split;
    int64_t p, mb;
    Recompute rc;
    std::vector<int64_t> layers;
  };
  for (const Case& c : {Case{{1, 1}, 4, 8, Recompute::kNone, {1, 4, 4, 1}}, Case{{4, 0}, 3, 4, Recompute::kFull, {4, 3, 3}},
                        Case{{0, 1}, 4, 2, Recompute::kNone, {3, 3, 3, 1}}, Case{{3, 7}, 2, 6, Recompute::kNone, {3, 7}}}) {
    MegatronOptions o = options({1, 1, c.p, 2}, 1, c.mb * 2, 256);  // TP 1: one compute op per layer
    o.split = c.split;
    o.recompute = c.rc;
    const Simulated s = run(m, o, cost);
    INFO("first " << c.split.first << " last " << c.split.last << " p " << c.p);
    REQUIRE_NOTHROW(traces::validate(s.plan.plan));
    REQUIRE(s.plan.stages.size() == c.layers.size());
    int64_t first_layer = 1;
    for (size_t st = 0; st < c.layers.size(); ++st) {
      CHECK(s.plan.stages[st].layers == c.layers[st]);
      // The stage's forward compute ops name exactly its layers, in order.
      std::vector<int> blocks;
      for (const auto& op : s.plan.plan.ops)
        if (op.stream == s.plan.stages[st].compute_stream && op.kind == traces::OpKind::kForward && op.block >= 1 &&
            op.block <= m.layers && (blocks.empty() || blocks.back() != op.block))
          if (std::find(blocks.begin(), blocks.end(), op.block) == blocks.end()) blocks.push_back(op.block);
      REQUIRE(blocks.size() == static_cast<size_t>(c.layers[st]));
      for (int64_t k = 0; k < c.layers[st]; ++k) CHECK(blocks[static_cast<size_t>(k)] == first_layer + k);
      first_layer += c.layers[st];
      const traces::StreamRecord* busy = s.report.stream(s.plan.stages[st].compute_stream);
      REQUIRE(busy);
      const int64_t per_mb = c.rc == Recompute::kFull ? 2 * 1000 + 2000 : 1000 + 2000;
      CHECK(busy->busy.ns == c.mb * c.layers[st] * per_mb);
    }
  }
  // An explicit split equal to the even one compiles the even plan, op for op.
  MegatronOptions o = options({1, 1, 2, 1}, 1, 4, 256);
  const Simulated even = run(m, o, cost);
  o.split = {5, 5};
  Simulated same = run(m, o, cost);
  CHECK(same.report.meta["plan"]["stage_layers"] == nlohmann::json{{"first", 5}, {"last", 5}});
  same.report.meta["plan"].erase("stage_layers");  // the only difference the split makes
  CHECK(traces::report_to_string(same.report) == traces::report_to_string(even.report));
  // Uneven stages with the interleaved schedule are refused, naming --vpp.
  o.vpp = 2;
  o.gbs = 4;
  CHECK_THROWS_WITH(compile_megatron_plan(m, o, place_groups(o.sizes, 8, 1)), Catch::Contains("--vpp 2: uneven"));
}

TEST_CASE("search_4d --framework fsdp: DP-only layouts priced by FSDP FULL_SHARD's memory, MPT-7B on 8 H100s",
          "[parallel][fsdp][search]") {
  // Before FSDP's estimator the layouts were judged by Megatron's (replicated bf16 weights and fp32
  // gradients) and the search found none for llama3.1-8b.
  const hw::HardwareCostModel cost(hw::load_machine("hgx-h100"));
  const ModelSpec mpt = resolve_model("gpt:hidden=4096,layers=32,heads=32,vocab=50368,max_positions=2048,bias=false");
  Search4dOptions o;
  o.nodes = 1;
  o.base.seq = 2048;
  o.base.gbs = 48;
  o.base.dtype = "bf16";
  apply_framework_preset(o.base, "fsdp");
  const Search4dResult r = search_4d(mpt, cost, o);
  REQUIRE(r.simulated >= 1);
  CHECK(r.failed == 0);
  CHECK(r.enumeration.rejected_by_reason.at("fsdp_dp_only") > 0);
  for (const auto& row : r.ranked) {
    const SearchCandidate& c = row.candidate;
    CHECK((c.tp == 1 && c.cp == 1 && c.pp == 1 && c.dp == 8));
    // Each simulated layout's memory is the estimator's FSDP figure for it.
    EstimateOptions eo;
    eo.method = EstimateMethod::kFsdp;
    ParallelConfig pc;
    pc.seq = 2048, pc.mbs = c.mbs, pc.dp = 8, pc.gbs = 48, pc.gpus = 8;
    CHECK(row.result.memory_bytes == estimate_memory(mpt, pc, eo).total_bytes);
    CHECK(row.result.fits_80pct);
  }
}
