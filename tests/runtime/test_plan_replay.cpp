// Plan replay on the emulated device. Oracles: the all-resident plan's losses (offloading must not
// change the numbers: bitwise where the arithmetic order is the same, else 1e-6 relative), the
// plan's validated high-water and capacity (memory), the plan's own deps and stream order
// (executor), the Report schema reader, and exact error messages.
#include "tests/runtime/torch_catch.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "hwmodels/hardware_cost_model.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/memory/pool_ledger.h"
#include "runtime/train/trainer.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/runtime_memory.h"
#include "sim/offload/compiler/systems.h"
#include "tests/runtime/plan_fixtures.h"
#include "traces/chrome_trace.h"
#include "traces/report.h"

namespace protwin::rt {
namespace {

using testing::compile_plan;
using testing::random_knobs;
using testing::resident_plan;
using testing::tiny_workload;

constexpr int kSteps = 20;

TrainResult train_plan(const RuntimePlan& rp, int64_t steps, uint64_t seed = 7) {
  TrainOptions o;
  o.steps = steps;
  o.seed = seed;
  o.compute_threads = 1;  // one fixed thread count: the same arithmetic in every run
  return train(rp, o);
}

bool has_op(const traces::Plan& p, const std::string& kind, const std::string& what) {
  return std::any_of(p.ops.begin(), p.ops.end(), [&](const traces::Op& op) {
    return traces::to_string(op.kind) == kind && (what.empty() || traces::to_string(op.sub_kind) == what);
  });
}

void check_policies(const std::string& model, uint32_t seed, int policies) {
  const sim::Workload w = tiny_workload(model);
  const RuntimePlan ref_plan = make_runtime_plan(resident_plan(w), "resident.json");
  REQUIRE_FALSE(ref_plan.offloads);
  const TrainResult ref = train_plan(ref_plan, kSteps);
  REQUIRE(ref.losses.size() == static_cast<size_t>(kSteps));
  CHECK(ref.losses.back() < ref.losses.front());  // it learns
  CHECK(ref.plan_peak_device_bytes <= ref.plan_device_high_water);
  // Measured (the device's caching allocator): at least the resident states' 16 B per parameter
  // (params, grads, Adam m and v), and its segments at least the blocks in use.
  int64_t states = 0;
  for (int64_t n : ref_plan.chunks.chunk_numel) states += 16 * n;
  CHECK(ref.peak_device_bytes >= states);
  CHECK(ref.peak_device_reserved_bytes >= ref.peak_device_bytes);

  std::mt19937 rng(seed);
  int bitwise = 0;
  for (int i = 0; i < policies; ++i) {
    const sim::offload::OffloadKnobs k = random_knobs(w, rng);
    const RuntimePlan rp = make_runtime_plan(compile_plan(w, k), "policy.json");
    INFO(model << " policy " << i << ": " << k.to_json().dump() << " layer_modes "
               << rp.plan.meta["layer_modes"].dump());
    // The layer modes the runtime reads from the ops are the compiler's (meta.layer_modes).
    for (size_t l = 0; l < rp.layer_modes.size(); ++l)
      CHECK(rp.plan.meta["layer_modes"][l] ==
            (rp.layer_modes[l] == LayerMode::kNone ? "none" : rp.layer_modes[l] == LayerMode::kCheckpoint ? "ckpt" : "swap"));
    const TrainResult r = train_plan(rp, kSteps);
    REQUIRE(r.losses.size() == ref.losses.size());
    // Same arithmetic unless a tied gradient is summed on the host in pieces or CPU Adam is the
    // ATen-op ("torch") flavour.
    const bool same_order = !has_op(rp.plan, "d2h", "partial_grad_chunk") && k.cpu_adam_impl == "simd";
    bool equal = true;
    for (size_t s = 0; s < r.losses.size(); ++s) {
      INFO("step " << s + 1 << ": " << r.losses[s] << " vs resident " << ref.losses[s]);
      CHECK(std::abs(r.losses[s] - ref.losses[s]) <= 1e-6 * std::abs(ref.losses[s]));
      if (same_order) CHECK(r.losses[s] == ref.losses[s]);
      equal = equal && r.losses[s] == ref.losses[s];
    }
    bitwise += equal ? 1 : 0;
    // Memory: the plan's bytes at the real times <= its validated high-water <= the capacity.
    CHECK(r.plan_peak_device_bytes <= r.plan_device_high_water);
    CHECK(r.plan_device_high_water <= r.device_capacity);
    CHECK(r.peak_device_bytes > 0);
    CHECK(r.peak_device_reserved_bytes >= r.peak_device_bytes);
  }
  WARN(model << ": " << bitwise << " of " << policies << " policies bitwise equal to the resident plan");
}

TEST_CASE("offloading changes nothing: random policies train like the all-resident plan (gpt2-tiny)",
          "[runtime][replay]") {
  check_policies("gpt2-tiny", 11, 12);
}

TEST_CASE("offloading changes nothing: random policies train like the all-resident plan (llama-tiny)",
          "[runtime][replay]") {
  check_policies("llama-tiny", 23, 12);
}

TEST_CASE("plan v4: without meta.knobs and meta.layer_modes a plan trains to the same losses, bitwise",
          "[runtime][replay]") {
  const sim::Workload w = tiny_workload("gpt2-tiny");
  sim::offload::OffloadKnobs k;  // ProTrain with every mode: persistent and offloaded chunks, swap, checkpoint
  k.chunk_bytes = int64_t{1} << 20;
  k.n_persist = 1;
  k.n_buffer = 6;  // a block needs 6 chunk buffers at once at 1 MiB chunks
  k.n_swap = 1;
  k.n_checkpoint = 1;
  const traces::Plan full = compile_plan(w, k);
  traces::Plan stripped = full;
  stripped.meta.erase("knobs");
  stripped.meta.erase("layer_modes");
  stripped = traces::plan_from_json(traces::plan_to_json(stripped), "stripped.json");
  const TrainResult ref = train_plan(make_runtime_plan(full, "full.json"), kSteps);
  const RuntimePlan rp = make_runtime_plan(stripped, "stripped.json");
  REQUIRE(rp.offloads);
  CHECK(std::count(rp.layer_modes.begin(), rp.layer_modes.end(), LayerMode::kSwap) == 1);
  CHECK(std::count(rp.layer_modes.begin(), rp.layer_modes.end(), LayerMode::kCheckpoint) == 1);
  CHECK(std::count(rp.chunks.device_resident.begin(), rp.chunks.device_resident.end(), true) == 1);
  CHECK(rp.chunks.device_resident == make_runtime_plan(full, "full.json").chunks.device_resident);
  CHECK(rp.chunks.device_optimizer == make_runtime_plan(full, "full.json").chunks.device_optimizer);
  const TrainResult r = train_plan(rp, kSteps);
  REQUIRE(r.losses.size() == ref.losses.size());
  for (size_t s = 0; s < r.losses.size(); ++s) CHECK(r.losses[s] == ref.losses[s]);
  // The simulator's model of the runtime's memory reads the same ops and chunks: the same bytes.
  const hw::HardwareCostModel cost(testing::host_machine(20));
  const traces::Report schedule = sim::PlanSimulator(cost).run(full);
  const sim::offload::RuntimeMemory want = sim::offload::predict_runtime_memory(full, schedule);
  const sim::offload::RuntimeMemory got = sim::offload::predict_runtime_memory(stripped, schedule);
  CHECK(got.allocated_peak_bytes == want.allocated_peak_bytes);
  CHECK(got.states_bytes == want.states_bytes);
  CHECK(want.states_bytes > 0);
  // Chunks without their fields cannot say where they live (the knobs are not read): refused, with the fix.
  traces::Plan bare = full;
  for (auto& c : bare.chunks) c.resident.reset();
  REQUIRE_THROWS_WITH(make_runtime_plan(bare, "bare.json"),
                      Catch::StartsWith("bare.json:/chunks/0: no \"resident\" and \"optimizer\"") &&
                          Catch::Contains("hint: recompile the plan"));
  // A device step on a chunk that lives on the host: refused by its pointer, not run on empty tensors.
  traces::Plan off = full;
  const auto host_chunk = std::find_if(off.chunks.begin(), off.chunks.end(), [](const auto& c) { return !*c.resident; });
  REQUIRE(host_chunk != off.chunks.end());
  host_chunk->optimizer = "device";
  REQUIRE_THROWS_WITH(make_runtime_plan(off, "off.json"),
                      Catch::StartsWith("off.json:/chunks/" + std::to_string(host_chunk - off.chunks.begin()) +
                                        "/optimizer: \"device\" needs \"resident\": true"));
}

TEST_CASE("DeepSpeed's gradient path (back up, pageable copy, host cast) and its step passes train like the resident plan",
          "[runtime][replay]") {
  const sim::Workload w = tiny_workload("gpt2-tiny");
  const TrainResult ref = train_plan(make_runtime_plan(resident_plan(w), "resident.json"), kSteps);
  sim::offload::OffloadKnobs k = sim::offload::base_knobs("deepspeed");  // one chunk per block
  k.n_buffer = 2;
  const RuntimePlan rp = make_runtime_plan(compile_plan(w, k), "deepspeed.json");
  REQUIRE(has_op(rp.plan, "h2d", "grad_roundtrip"));
  REQUIRE(has_op(rp.plan, "d2h", "grad_fp32"));
  REQUIRE(has_op(rp.plan, "host_cast", ""));
  for (const char* what : {"overflow_scan", "unscale", "fp16_copy"}) REQUIRE(has_op(rp.plan, "host_pass", what));
  const TrainResult r = train_plan(rp, kSteps);
  REQUIRE(r.losses.size() == ref.losses.size());
  // Same arithmetic, except that the tied embedding's gradient is summed on the host in pieces.
  REQUIRE(has_op(rp.plan, "d2h", "partial_grad_chunk"));
  for (size_t s = 0; s < r.losses.size(); ++s)
    CHECK(std::abs(r.losses[s] - ref.losses[s]) <= 1e-6 * std::abs(ref.losses[s]));
  CHECK(r.plan_peak_device_bytes <= r.plan_device_high_water);
  CHECK(r.peak_pageable_bytes > 0);  // the pageable gradient copies and the fp16 mirrors
}

TEST_CASE("the executor honours deps and stream order and writes a Report in the simulator's schema",
          "[runtime][replay]") {
  const sim::Workload w = tiny_workload("gpt2-tiny");
  sim::offload::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 2;
  k.n_swap = 1;
  k.n_checkpoint = 1;
  const RuntimePlan rp = make_runtime_plan(compile_plan(w, k), "plan.json");
  REQUIRE(has_op(rp.plan, "h2d", "activation"));
  REQUIRE(has_op(rp.plan, "recompute", ""));
  TrainOptions o;
  o.steps = 1;
  o.link_gbps = 5.0;  // throttled copies
  const TrainResult r = train(rp, o);
  const traces::Report& rep = r.last_report;
  CHECK(rep.meta["source"] == "runtime");
  REQUIRE(rep.ops.size() == rp.plan.ops.size());
  for (const traces::Op& op : rp.plan.ops) {
    const traces::OpRecord& rec = rep.ops[static_cast<size_t>(op.id)];
    CHECK(rec.id == op.id);
    CHECK(rec.stream == op.stream);
    CHECK(rec.end.ns >= rec.start.ns);
    for (int d : op.deps) CHECK(rec.start.ns >= rep.ops[static_cast<size_t>(d)].end.ns);
  }
  for (const traces::StreamRecord& s : rep.streams) {
    int64_t prev_end = 0;
    for (const traces::OpRecord& rec : rep.ops) {
      if (rec.stream != s.name) continue;
      CHECK(rec.start.ns >= prev_end);
      prev_end = rec.end.ns;
    }
  }
  // A throttled copy takes at least bytes / rate (1 GB/s = 1 byte/ns).
  for (const traces::Op& op : rp.plan.ops)
    if (op.kind == traces::OpKind::kH2D && op.sub_kind == traces::OpSubKind::kParamChunk) {
      const traces::OpRecord& rec = rep.ops[static_cast<size_t>(op.id)];
      const int64_t used = rp.chunks.chunk_numel[static_cast<size_t>(op.chunk)] * 4;
      CHECK(rec.end.ns - rec.start.ns >= static_cast<int64_t>(static_cast<double>(used) / 5.0));
    }
  const traces::Report back = traces::report_from_json(traces::report_to_json(rep), "measured.json");
  CHECK(back.ops.size() == rep.ops.size());
  REQUIRE(back.pool("gpu") != nullptr);
  CHECK(back.pool("gpu")->peak.n == r.plan_peak_device_bytes);
  CHECK(traces::chrome_trace(rep)["traceEvents"].size() > rep.ops.size());
}

TEST_CASE("the device pool refuses to go over capacity, naming the op and the pool", "[runtime][memory]") {
  traces::PoolSpec gpu{"gpu", Bytes(1000), Bytes(100)};
  PoolLedger ledger({gpu});
  ledger.apply("plan op 3 (h2d, stream h2d)", "gpu", 800, 10);
  CHECK(ledger.peak("gpu") == 900);
  CHECK_THROWS_WITH(ledger.apply("plan op 4 (h2d, stream h2d)", "gpu", 200, 20),
                    "plan op 4 (h2d, stream h2d): pool gpu over capacity: 900 bytes in use + 200 > "
                    "capacity 1000 bytes");
  ledger.apply("plan op 5 (d2h, stream d2h)", "gpu", -900, 30);
  CHECK(ledger.used("gpu") == 0);
  CHECK(ledger.peak("gpu") == 900);
}

TEST_CASE("a plan over the device capacity is refused before the first step", "[runtime][memory]") {
  const sim::Workload w = tiny_workload("gpt2-tiny");
  sim::offload::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 2;
  traces::Plan plan = compile_plan(w, k);
  const RuntimePlan ok = make_runtime_plan(plan, "plan.json");
  const int g = plan.pool_index("gpu");
  plan.pools[static_cast<size_t>(g)].capacity = Bytes(ok.gpu_high_water() - 1);
  try {
    make_runtime_plan(plan, "plan.json");
    FAIL("an over-capacity plan was accepted");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("test-plan.json:/ops/", 0) == 0);  // the file and the op's pointer
    CHECK(msg.find("): pool gpu over capacity: ") != std::string::npos);
  }
}

TEST_CASE("plans the runtime cannot replay are refused naming the file, field and expectation",
          "[runtime][replay]") {
  const sim::Workload w = tiny_workload("gpt2-tiny");
  const traces::Plan good = resident_plan(w);
  auto refuse = [&](const std::function<void(traces::Plan&)>& edit, const std::string& message) {
    traces::Plan p = good;
    edit(p);
    CHECK_THROWS_WITH(make_runtime_plan(p, "p.json"), message);
  };
  refuse([](traces::Plan& p) { p.meta["model_spec"]["family"] = "opt"; },
         "p.json:/meta/model_spec/family: the runtime implements gpt2 and llama, got \"opt\"");
  refuse([](traces::Plan& p) { p.meta["model_spec"]["norm"] = "rmsnorm"; },
         "p.json:/meta/model_spec/norm: the runtime's GPT-2 needs \"layernorm\", got \"rmsnorm\"");
  refuse([](traces::Plan& p) { p.gpus = 4; },
         "p.json:/meta/gpus: the runtime replays one GPU per process, and this plan has 4 GPUs but 1 process is "
         "running\nhint: start one process per GPU: mpirun -np 4 protwin train --plan p.json ... (or compile the "
         "plan with --gpus 1)");
  refuse([](traces::Plan& p) { p.dtype = "bf16"; },
         "p.json:/meta/dtype: the runtime replays fp32 plans, got \"bf16\"\nhint: compile the plan with --dtype fp32");
  refuse([](traces::Plan& p) { p.chunks[0].params[0].name = "wte.weight"; },
         "p.json:/chunks/0/params/0/name: \"wte.weight\" is not a parameter of the runtime's gpt2 model");
  refuse([](traces::Plan& p) { p.meta["model_spec"]["hidden"] = 128; },
         "p.json:/chunks/0/params/0/shape: [256,256] for embed.tokens.weight, the runtime's model has [256,128]");
}

}  // namespace
}  // namespace protwin::rt
