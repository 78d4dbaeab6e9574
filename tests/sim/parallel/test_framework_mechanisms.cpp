// What the measured frameworks do beyond the model's kernels (issue #18): torch FSDP FULL_SHARD
// under composer (--framework fsdp), and Megatron-LM SC'21's scatter-gather pipeline sends with
// torch.cuda.synchronize(), its Float16Optimizer step and LocalDDP's main_grad accumulation
// (--framework megatron-lm). Oracles: closed-form counts and bytes of the compiled plan's
// collectives, sends and passes, counted from the frameworks' code as cited in
// sim/parallel/compiler/megatron_compiler.cpp; the step's price as bytes per parameter at the machine's
// memory bandwidth.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hwmodels/hardware_cost_model.h"
#include "sim/parallel/compiler/megatron_compiler.h"
#include "sim/parallel/search/simulate_4d.h"
#include "sim/workload/workload.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::parallel;

namespace {

constexpr int64_t kLayers = 4;

ModelSpec tiny_gpt() { return resolve_model("gpt:hidden=128,layers=4,heads=4,vocab=1000,max_positions=64"); }

MegatronOptions layout(int64_t tp, int64_t pp, int64_t dp, int64_t microbatches, const std::string& framework,
                       const std::string& dtype = "bf16") {
  MegatronOptions o;
  o.sizes = {tp, 1, pp, dp};
  o.mbs = 2;
  o.gbs = 2 * dp * microbatches;
  o.seq = 64;
  o.dtype = dtype;
  o.describe_ops = true;
  apply_framework_preset(o, framework);
  return o;
}

ParallelPlan compile(const MegatronOptions& o) {
  return compile_megatron_plan(tiny_gpt(), o, place_groups(o.sizes, 8, 1));
}

std::string what(const traces::Op& op) {
  return op.attrs.is_object() && op.attrs.contains("what") ? op.attrs["what"].get<std::string>() : std::string();
}

bool on(const traces::Op& op, const char* role) { return op.stream.find(role) != std::string::npos; }

// FSDP's own elementwise passes (fsdp_passes), not a block's compute.
bool fsdp_pass(const traces::Op& op) {
  return op.attrs.is_object() && op.attrs.contains("part") && op.attrs["part"].get<std::string>().rfind("FSDP", 0) == 0;
}

// Parameters of one decoder layer and of the whole model (TP 1).
int64_t layer_params() {
  WorkloadOptions wo;
  wo.batch = 1;
  wo.seq = 64;
  wo.fused_projections = true;
  return build_workload(tiny_gpt(), wo).layer(0).param_count;
}

}  // namespace

TEST_CASE("FSDP FULL_SHARD: every micro-batch gathers each layer twice, the root once, and reduce-scatters each",
          "[parallel][framework][closed-form]") {
  const int64_t dp = 4, m = 3;
  MegatronOptions o = layout(1, 1, dp, m, "fsdp");
  const ParallelPlan p = compile(o);
  const int64_t total = p.stages.front().params, lp = layer_params(), root = total - kLayers * lp;
  REQUIRE(root > 0);
  std::map<std::string, int> n;
  int64_t gathered = 0, reduced = 0;
  for (const auto& op : p.plan.ops) {
    if (!on(op, "dp_comm")) continue;
    ++n[traces::to_string(op.kind)];
    if (op.kind == traces::OpKind::kAllGather) gathered += op.work.bytes;
    if (op.kind == traces::OpKind::kReduceScatter) reduced += op.work.bytes;
    CHECK(op.group.ranks == dp);
  }
  // Per micro-batch: the root and L layers gathered for forward, the L layers again for backward;
  // L + 1 reduce-scatters (composer's ddp_sync_context does nothing for FSDP: no no_sync).
  CHECK(n["all_gather"] == m * (1 + 2 * kLayers));
  CHECK(n["reduce_scatter"] == m * (kLayers + 1));
  CHECK(n["all_reduce"] == 0);  // no Megatron gradient buckets
  CHECK(gathered == m * 2 * (root + 2 * kLayers * lp));           // bf16 parameters
  CHECK(reduced == m * 4 * total);                                // fp32 reduction (composer DEFAULT)
  // The step: FSDP's clip_grad_norm_ all-reduce, then the unfused DecoupledAdamW over 1/DP.
  int norms = 0, steps = 0;
  for (const auto& op : p.plan.ops) {
    if (op.kind == traces::OpKind::kAllReduce && what(op) == "FSDP grad norm") {
      ++norms;
      CHECK(op.work.bytes == 4);
    }
    if (op.kind == traces::OpKind::kAdamDevice) {
      ++steps;
      CHECK(op.work.params == (total + dp - 1) / dp);
      CHECK(op.bytes_per_param == 92.0);
    }
  }
  CHECK(norms == 1);
  CHECK(steps == 1);

  // PURE mixed precision reduces in the compute dtype.
  o.grad_bytes = 2;
  int64_t reduced_pure = 0;
  for (const auto& op : compile(o).plan.ops)
    if (op.kind == traces::OpKind::kReduceScatter) reduced_pure += op.work.bytes;
  CHECK(reduced_pure == m * 2 * total);
}

TEST_CASE("FSDP's gathers: limit_all_gathers waits for the layer two before, backward's first for the forward's end", "[parallel][framework]") {
  const ParallelPlan p = compile(layout(1, 1, 2, 1, "fsdp"));
  const auto& ops = p.plan.ops;
  // Forward: each layer's compute waits for one gather; from the third layer on, that gather
  // waits for the forward of the layer two before.
  std::map<int, int> gather_of_layer;  // block -> its forward gather
  for (const auto& op : ops) {
    if (op.kind != traces::OpKind::kForward || op.block < 1 || op.block > kLayers) continue;
    for (int d : op.deps)
      if (ops[static_cast<size_t>(d)].kind == traces::OpKind::kAllGather && what(ops[static_cast<size_t>(d)]) == "FSDP unit parameters")
        gather_of_layer.emplace(op.block, d);
  }
  REQUIRE(gather_of_layer.size() == static_cast<size_t>(kLayers));
  for (int b = 3; b <= kLayers; ++b) {
    const auto& g = ops[static_cast<size_t>(gather_of_layer[b])];
    const bool waits = std::any_of(g.deps.begin(), g.deps.end(), [&](int d) {
      const auto& x = ops[static_cast<size_t>(d)];
      return x.kind == traces::OpKind::kForward && x.block == b - 2;
    });
    CHECK(waits);
  }
  // Backward: the last layer's gather waits for the forward's end (its pre-backward hook), and
  // every layer's backward waits for its own gather.
  int last_forward = -1;
  for (const auto& op : ops)
    if (op.kind == traces::OpKind::kForward) last_forward = op.id;
  for (const auto& op : ops) {
    if (op.kind != traces::OpKind::kBackward || op.block != kLayers || fsdp_pass(op)) continue;
    int gather = -1;
    for (int d : op.deps)
      if (ops[static_cast<size_t>(d)].kind == traces::OpKind::kAllGather) gather = d;
    REQUIRE(gather >= 0);
    const auto& g = ops[static_cast<size_t>(gather)].deps;
    CHECK(std::find(g.begin(), g.end(), last_forward) != g.end());
  }
}

TEST_CASE("FSDP on one GPU: its gathers run on a declared dp_comm stream", "[parallel][framework][errors]") {
  // DP 1 used to leave dp_comm undeclared while FSDP's gathers were put on it ("unknown stream").
  const ParallelPlan p = compile(layout(1, 1, 1, 2, "fsdp"));
  std::set<std::string> declared;
  for (const auto& s : p.plan.streams) declared.insert(s.name);
  int gathers = 0;
  for (const auto& op : p.plan.ops) {
    CHECK(declared.count(op.stream) == 1);
    if (op.kind == traces::OpKind::kAllGather) ++gathers;
  }
  CHECK(gathers == 2 * (1 + 2 * kLayers));
}

TEST_CASE("FSDP shards over data parallelism only: TP, PP or CP is refused naming --framework", "[parallel][framework][errors]") {
  CHECK_THROWS_WITH(compile(layout(2, 1, 2, 1, "fsdp")), Catch::Contains("--framework fsdp"));
  CHECK_THROWS_WITH(compile(layout(1, 2, 2, 1, "fsdp")), Catch::Contains("--framework fsdp"));
}

TEST_CASE("Megatron-LM SC'21 pipeline sends: 1/TP slices, a TP all-gather on receipt, the host synchronised",
          "[parallel][framework][closed-form]") {
  const int64_t tp = 2, m = 4;
  const ParallelPlan lm = compile(layout(tp, 2, 1, m, "megatron-lm", "fp16"));
  const ParallelPlan ds = compile(layout(tp, 2, 1, m, "megatron-deepspeed", "fp16"));
  auto sends = [](const ParallelPlan& p) {
    std::vector<const traces::Op*> out;
    for (const auto& op : p.plan.ops)
      if (op.kind == traces::OpKind::kSendRecv) out.push_back(&op);
    return out;
  };
  const auto s_lm = sends(lm), s_ds = sends(ds);
  REQUIRE(s_lm.size() == static_cast<size_t>(2 * m));  // one forward and one backward send per micro-batch
  REQUIRE(s_ds.size() == s_lm.size());
  for (size_t i = 0; i < s_lm.size(); ++i) {
    CHECK(s_lm[i]->work.bytes * tp == s_ds[i]->work.bytes);
    CHECK(s_lm[i]->host_sync);  // torch.cuda.synchronize() after batch_isend_irecv
    CHECK_FALSE(s_ds[i]->host_sync);
  }
  int gathers = 0;
  for (const auto& op : lm.plan.ops)
    if (op.kind == traces::OpKind::kAllGather && what(op) == "scatter-gather: received slices") {
      ++gathers;
      CHECK(op.work.bytes == s_ds.front()->work.bytes);
      CHECK(on(op, "compute"));
    }
  CHECK(gathers == 2 * m);  // every receive, forward (stage 1) and backward (stage 0)
}

TEST_CASE("Megatron-LM SC'21 step: main grads, unscale, norm, Adam, copy back, two synced all-reduces with fp16",
          "[parallel][framework][closed-form]") {
  for (const std::string dtype : {"fp16", "bf16"}) {
    const ParallelPlan p = compile(layout(2, 2, 2, 2, "megatron-lm", dtype));
    int synced = 0, steps = 0;
    for (const auto& op : p.plan.ops) {
      if (op.kind == traces::OpKind::kAllReduce && (what(op) == "found_inf" || what(op) == "grad norm")) {
        CHECK(op.host_sync);  // .item()
        CHECK(op.work.bytes == 4);
        CHECK(op.group.ranks == 4);  // the model-parallel group, TP x PP
        ++synced;
      }
      if (op.kind == traces::OpKind::kAdamDevice) {
        ++steps;
        // fp16: Adam 28 + fp16 grads to fp32 main grads 6 + unscale 8 + norm 4 + params back 6;
        // bf16: grads reduced and kept in fp32 (no copy), no loss scaler.
        CHECK(op.bytes_per_param == (dtype == "fp16" ? 52.0 : 38.0));
      }
    }
    CHECK(steps == 2);                                 // one per stage
    CHECK(synced == steps * (dtype == "fp16" ? 2 : 1));
  }
}

TEST_CASE("LocalDDP (megatron-lm without overlap): main_grad += grad after every backward", "[parallel][framework][closed-form]") {
  const int64_t m = 3;
  MegatronOptions o = layout(1, 1, 2, 1, "megatron-deepspeed", "fp16");
  o.gbs = o.mbs * 2 * m;
  o.overlap_grad_reduce = false;
  apply_framework_preset(o, "megatron-lm");
  REQUIRE(o.local_ddp);
  const ParallelPlan p = compile(o);
  int passes = 0;
  double bytes = 0;
  for (const auto& op : p.plan.ops)
    if (op.attrs.contains("part") && op.attrs["part"] == "main_grad accumulation") {
      ++passes;
      for (const auto& k : p.plan.kernels_of(op)) bytes += k.bytes;
    }
  CHECK(passes == m * (kLayers + 2));  // every unit (embedding, layers, head) of every micro-batch
  // fp16 main_grad (no --accumulate-allreduce-grads-in-fp32): read grad and main_grad, write it.
  CHECK(bytes == Approx(static_cast<double>(m) * 3 * 2 * static_cast<double>(p.stages.front().params)));

  MegatronOptions torch_ddp = layout(1, 1, 2, m, "megatron-lm", "fp16");
  CHECK_FALSE(torch_ddp.local_ddp);
}

TEST_CASE("the framework presets switch the SC'21 and FSDP mechanisms on where the code has them",
          "[parallel][framework]") {
  MegatronOptions lm = layout(1, 1, 1, 1, "megatron-lm", "fp16");
  CHECK(lm.bias_passes);
  CHECK(lm.p2p_scatter_gather);
  CHECK(lm.p2p_sync);
  CHECK(lm.framework_step);
  CHECK_FALSE(lm.fsdp);
  CHECK_FALSE(layout(1, 1, 1, 1, "megatron-lm", "fp32").framework_step);
  CHECK(layout(1, 1, 1, 1, "megatron-deepspeed", "fp16").bias_passes);  // its own linear adds and sums the bias
  CHECK_FALSE(layout(1, 1, 1, 1, "megatron-core", "fp16").bias_passes);
  for (const char* fw : {"megatron-core", "megatron-deepspeed"}) {
    const MegatronOptions o = layout(1, 1, 1, 1, fw, "fp16");
    CHECK_FALSE(o.p2p_scatter_gather);
    CHECK_FALSE(o.p2p_sync);
    CHECK_FALSE(o.framework_step);
    CHECK_FALSE(o.local_ddp);
    CHECK_FALSE(o.fsdp);
    CHECK_FALSE(o.fsdp_passes);
  }
  const MegatronOptions f = layout(1, 1, 1, 1, "fsdp");
  CHECK(f.fsdp);
  CHECK(f.fsdp_passes);
  CHECK(f.framework_step);
  CHECK(f.grad_bytes == 4);
  CHECK_FALSE(f.dropout);
}

TEST_CASE("a step's own bytes per parameter price it at the memory bandwidth, bad values name the op",
          "[parallel][framework][errors]") {
  const hw::HardwareCostModel cost(hw::load_machine("dgx-a100"));
  traces::Plan plan;
  traces::Op op;
  op.id = 0;
  op.kind = traces::OpKind::kAdamDevice;
  op.stream = "compute";
  op.work.params = 1000000000;
  const double machine = cost.cost(op, plan).stream_time().seconds();
  CHECK(machine == Approx(cost.device_adam_seconds(1e9)).epsilon(1e-6));
  op.bytes_per_param = 92.0;
  CHECK(cost.cost(op, plan).stream_time().seconds() == Approx(cost.memory_seconds(92e9)).epsilon(1e-6));
  CHECK(cost.cost(op, plan).stream_time().seconds() > machine);
}

TEST_CASE("FSDP's gradient pre-divide factor follows torch's rule: f doubles while it divides world and world/f > f",
          "[parallel][framework][closed-form]") {
  // torch 2.1 fsdp/_init_utils.py _get_gradient_predivide_factor, worked by hand.
  CHECK(fsdp_predivide_factor(1) == 1);
  CHECK(fsdp_predivide_factor(2) == 2);   // post-divide 1
  CHECK(fsdp_predivide_factor(4) == 2);
  CHECK(fsdp_predivide_factor(8) == 4);   // MosaicML's 8-GPU rows: pre 4, post 2
  CHECK(fsdp_predivide_factor(16) == 4);
  CHECK(fsdp_predivide_factor(64) == 8);  // the 64-GPU row: pre 8, post 8
  CHECK(fsdp_predivide_factor(6) == 4);   // doubled while 6 % f == 0 and 6 / f > f: 1, 2, 4 (post 1.5)
  CHECK(fsdp_pass_bytes(600, 6, 4, 4, false).post_backward == Approx(16.0 * 600 + 8.0 * 100));  // a post-division by 1.5
}

TEST_CASE("FSDP's own passes: shard casts before every gather, the gradient passes before every reduce-scatter",
          "[parallel][framework][closed-form]") {
  const int64_t dp = 4, m = 3;
  MegatronOptions o = layout(1, 1, dp, m, "fsdp");
  REQUIRE(o.fsdp_passes);
  const ParallelPlan p = compile(o);
  const int64_t total = p.stages.front().params, lp = layer_params(), root = total - kLayers * lp;
  const auto shard = [&](int64_t n) { return static_cast<double>((n + dp - 1) / dp); };
  int casts = 0, passes = 0;
  double cast_bytes = 0, pass_bytes = 0;
  for (const auto& op : p.plan.ops) {
    const std::string part = op.attrs.contains("part") ? op.attrs["part"].get<std::string>() : "";
    if (part == "FSDP low-precision shard cast") ++casts, cast_bytes += static_cast<double>(op.work.bytes);
    if (part == "FSDP post-backward gradient passes") ++passes, pass_bytes += static_cast<double>(op.work.bytes);
    if (!part.empty() && part.rfind("FSDP", 0) == 0) CHECK(on(op, "compute"));
  }
  // Per micro-batch: one cast per gather (the root once, each layer in forward and backward) and
  // one post-backward pass per reduce-scatter.
  CHECK(casts == m * (1 + 2 * kLayers));
  CHECK(passes == m * (kLayers + 1));
  // bf16 parameters from fp32 shards: read 4, write 2 per shard element.
  CHECK(cast_bytes == Approx(m * 6.0 * (shard(root) + 2 * kLayers * shard(lp))));
  // DEFAULT (reduce fp32), 4 ranks (pre-divide 2, post-divide 2): the flat gradient's cat (2 + 2),
  // cast bf16 -> fp32 (2 + 4), the pre-division (4 + 4) per unsharded element, the post-division
  // (4 + 4) per shard element, and from the second micro-batch on the shard's accumulation (4 + 4 + 4).
  const auto unit = [&](int64_t n, int mb) {
    return 18.0 * static_cast<double>(n) + 8.0 * shard(n) + (mb > 0 ? 12.0 * shard(n) : 0.0);
  };
  double want = 0;
  for (int mb = 0; mb < m; ++mb) {
    want += unit(root, mb);
    for (int64_t l = 0; l < kLayers; ++l) want += unit(lp, mb);
  }
  CHECK(pass_bytes == Approx(want));
  CHECK(fsdp_pass_bytes(lp, dp, 2, 2, false).post_backward ==
        Approx(8.0 * static_cast<double>(lp) + 4.0 * shard(lp) + 6.0 * shard(lp)));  // PURE: no cast, the shard back to fp32

  // Every reduce-scatter waits for its unit's passes (they share the post-backward stream).
  std::map<int, const traces::Op*> by_id;
  for (const auto& op : p.plan.ops) by_id[op.id] = &op;
  for (const auto& op : p.plan.ops) {
    if (op.kind != traces::OpKind::kReduceScatter) continue;
    bool waits = false;
    for (int d : op.deps)
      waits = waits || (by_id.count(d) && by_id[d]->attrs.contains("part") &&
                        by_id[d]->attrs["part"] == "FSDP post-backward gradient passes");
    CHECK(waits);
  }

  // Off: none of them, and the iteration's other ops unchanged.
  o.fsdp_passes = false;
  const ParallelPlan off = compile(o);
  CHECK(off.plan.ops.size() + static_cast<size_t>(casts + passes) == p.plan.ops.size());
}

namespace {
// A small GPT on `options`' layout at sequence 512, for the SM-share tests below.
Simulate4dConfig sm_share_config(const MegatronOptions& options) {
  Simulate4dConfig cfg;
  cfg.options = options;
  cfg.options.describe_ops = false;
  cfg.options.seq = 512;
  return cfg;
}
const char* const kSmShareModel = "gpt:hidden=2048,layers=4,heads=16,vocab=1000,max_positions=512";
// The layout simulated without the share, with it (streamed) and with it as a whole plan.
struct SmShareRuns {
  Simulate4dResult off, on, whole;
};
SmShareRuns sm_share_runs(const hw::HardwareCostModel& cost, const MegatronOptions& options) {
  Simulate4dConfig cfg = sm_share_config(options);
  const ModelSpec model = resolve_model(kSmShareModel);
  SmShareRuns r;
  cfg.collective_sms = false;
  r.off = simulate_4d(model, cost, cfg);
  cfg.collective_sms = true;
  r.on = simulate_4d(model, cost, cfg);
  cfg.keep_report = true;
  r.whole = simulate_4d(model, cost, cfg);
  return r;
}
}  // namespace

// The collectives' SM share (sim/engine/contention.h collective_sm_rules) in simulate_4d. Oracles:
// bounds from the closed form (compute is stretched by at most sms / (sms - channels) over the
// time the dp_comm stream was busy) and the simulation without it, exactly, when the machine has
// no channel count.
TEST_CASE("FSDP: compute beside the gathers loses the SMs of NCCL's channels, within the closed-form bound",
          "[parallel][framework][contention]") {
  hw::Machine m = hw::load_machine("hgx-h100");
  REQUIRE(m.intra_node.ring_channels == 24);
  const hw::HardwareCostModel cost(m);
  const auto [off, on, whole] = sm_share_runs(cost, layout(1, 1, 8, 2, "fsdp"));
  double dp_busy = 0;
  for (const auto& s : off.streams)
    if (s.name == "stage0.dp_comm") dp_busy = s.busy.seconds();
  REQUIRE(dp_busy > 0.05 * off.iteration_s);  // the gathers overlap a real share of the step
  CHECK(on.iteration_s > off.iteration_s);
  // At most every overlapped second of compute stretched by 132/108 (the gathers also wait less
  // for a slower compute, never more).
  CHECK(on.iteration_s <= off.iteration_s + 2 * dp_busy * (132.0 / 108.0 - 1));
  CHECK(whole.iteration_s == on.iteration_s);  // the whole plan's passes settle on the same times

  m.intra_node.ring_channels = 0;  // unknown: the simulation without it
  const hw::HardwareCostModel unknown(m);
  CHECK(simulate_4d(resolve_model(kSmShareModel), unknown, sm_share_config(layout(1, 1, 8, 2, "fsdp"))).iteration_s ==
        off.iteration_s);
}

// With several pipeline stages, several compute streams are paced at once, and a streamed run hands
// an ended op's slot to the next op generated, of any stream: the run's ends must not mix them up
// (one version counter for the whole run). Oracle: the whole plan's run, stream by stream.
TEST_CASE("collective SM share over pipeline stages: the streamed run equals the whole plan's", "[parallel][contention]") {
  const hw::HardwareCostModel cost(hw::load_machine("hgx-h100"));
  const auto [off, streamed, whole] = sm_share_runs(cost, layout(2, 2, 2, 4, "megatron-core"));
  CHECK(whole.iteration_s > off.iteration_s);  // the share slows this layout
  CHECK(streamed.iteration_s == whole.iteration_s);
  REQUIRE(streamed.streams.size() == whole.streams.size());
  for (size_t k = 0; k < whole.streams.size(); ++k) {
    INFO(whole.streams[k].name);
    CHECK(streamed.streams[k].busy.ns == whole.streams[k].busy.ns);
  }
}
