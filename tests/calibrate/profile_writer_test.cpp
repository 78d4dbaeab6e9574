// The profiler's outputs: the machine document it writes is a valid protwin.machine (oracle: the
// machine reader, hwmodels/machine.h) with every section's provenance, its numbers are the
// measurements passed in; an op profile with provenance measured wins over the curves in the cost
// model (oracle: the entry's mean); the kernel list equals the workload model's signatures.
#include <catch2/catch.hpp>

#include <algorithm>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "runtime/profile/host_measurements.h"
#include "runtime/profile/profile_shapes.h"
#include "sim/engine/plan_simulator.h"
#include "sim/workload/model_spec.h"
#include "sim/workload/workload.h"
#include "tests/calibrate/chain_plan.h"
#include "traces/error.h"
#include "traces/op_profile.h"

using namespace protwin;

namespace {
rt::HostMeasurements sample() {
  rt::HostMeasurements m;
  m.cpu = "test CPU";
  m.cores = 2;
  m.memory_bytes = int64_t{24} << 30;
  m.compute_threads = 1;
  m.gemm = {{0.5, 0.05}, {0.01, 0.02}, {0.5, 0.07}, {2.0, 0.08}};  // unsorted, one x twice
  m.memory = {{1e4, 30.0}, {1e8, 9.0}};
  m.dram_GBps = 10;
  m.launch_floor_us = 3;
  m.link_throttle_GBps = 1;
  m.h2d_GBps = 0.95;
  m.d2h_GBps = 0.97;
  m.h2d_latency_us = m.d2h_latency_us = 50;
  m.duplex_fraction = 1;
  m.copy_size = {{65536, 0.8}, {16777216, 1.0}};
  m.adam_params_per_s_1t = 9e8;
  m.adam_params_per_s_all = 1.2e9;
  m.adam_fixed_us = 4;
  m.adam_torch_slowdown = 12.5;
  m.when = "2026-01-01T00:00:00Z";
  return m;
}
}  // namespace

TEST_CASE("monotone_curve sorts by x and averages equal x") {
  const auto c = rt::monotone_curve(sample().gemm, "gemm");
  REQUIRE(c.size() == 3);
  CHECK(c[0].x == 0.01);
  CHECK(c[1].x == 0.5);
  CHECK(c[1].y == Approx(0.06));
  CHECK(c[2].y == 0.08);
  CHECK_THROWS_WITH(rt::monotone_curve({{0, 1}}, "profile: GEMM curve"), "profile: GEMM curve: no valid measurement");
}

TEST_CASE("the profiler's machine document loads as a machine with measured provenance") {
  const nlohmann::json j = rt::machine_json(sample());
  const hw::Machine m = hw::machine_from_json(j, "profiled.json");
  CHECK(m.name == "host-emulated");
  CHECK(m.host.cores == 2);
  CHECK(m.gpu.compute.at("fp32").sustained_tflops == 0.08);  // the largest GEMM
  CHECK(m.gpu.compute.at("fp32").gemm_curve.xs() == std::vector<double>{0.01, 0.5, 2.0});
  CHECK(m.gpu.hbm_achievable_GBps == 9.0);  // the largest size (DRAM, not cache)
  CHECK(m.host_link.h2d.pinned_GBps == 0.95);
  CHECK(m.host_link.d2h.pinned_GBps == 0.97);
  CHECK(m.cpu_adam.per_core_params_per_s == 9e8);
  CHECK(m.cpu_adam.torch_slowdown == 12.5);
  CHECK(m.provenance_of("/cpu_adam/torch_slowdown").value("kind", "") == "measured");
  // all-core rate = dram_efficiency x dram / 28 B per param
  CHECK(m.host.dram_GBps == Approx(1.2e9 * 28e-9));  // Adam moved more than the add: DRAM >= that
  CHECK(m.cpu_adam.dram_efficiency * m.host.dram_GBps * 1e9 / 28 == Approx(1.2e9));
  for (const char* p : {"/gpu", "/host", "/host_link", "/cpu_adam"})
    CHECK(m.provenance_of(p).value("kind", "") == "measured");
  CHECK(m.provenance_of("/gpu/compute/fp32/gemm_curve").value("kind", "") == "measured");
  CHECK(m.provenance_of("/collectives").value("kind", "") == "assumed");
  CHECK(m.provenance_of("/gpu/allocator").value("kind", "") == "assumed");
}

TEST_CASE("the profiler's machine document carries the measured host passes, and none when unmeasured") {
  rt::HostMeasurements m = sample();
  CHECK_FALSE(rt::machine_json(m).contains("host_passes"));
  CHECK(hw::machine_from_json(rt::machine_json(m), "profiled.json").host_passes.overflow_scan_ns_per_elem == 0);
  m.overflow_scan_ns_per_elem = 1.8;
  m.unscale_ns_per_elem = 0.09;
  m.fp16_copy_ns_per_elem = 0.2;
  const hw::Machine mm = hw::machine_from_json(rt::machine_json(m), "profiled.json");
  CHECK(mm.host_passes.overflow_scan_ns_per_elem == 1.8);
  CHECK(mm.host_passes.unscale_ns_per_elem == 0.09);
  CHECK(mm.host_passes.fp16_copy_ns_per_elem == 0.2);
  CHECK(mm.provenance_of("/host_passes").value("kind", "") == "measured");
}

TEST_CASE("the checked-in host-emulated machine loads") {
  const hw::Machine m = hw::load_machine("host-emulated");
  CHECK(m.gpu.compute.count("fp32") == 1);
  CHECK(!m.provenance_of("/gpu").is_null());
}

TEST_CASE("a measured op profile wins over the curves, forward and backward") {
  const hw::Machine m = hw::machine_from_json(rt::machine_json(sample()), "profiled.json");
  traces::OpProfile p("emulated", "measured", "test");
  traces::OpProfileEntry e;
  e.sig = {"gemm", {1024, 768, 256}, "fp32"};
  e.us.add(1234.0);
  e.source = "test";
  p.add(e);
  e.sig = {"layernorm", {262144}, "fp32"};
  e.us = {};
  e.us.add(77.0);
  p.add(e);
  e.sig = {"layernorm_backward", {262144}, "fp32"};
  e.us = {};
  e.us.add(150.0);
  p.add(e);
  const traces::OpProfile round = traces::OpProfile::parse(p.to_json().dump(), "profile.json");
  const auto cost_model = hw::make_cost_model(m, &round);
  const hw::HardwareCostModel& cost = *cost_model;
  traces::Kernel k;
  k.sig = {"gemm", {1024, 768, 256}, "fp32"};
  CHECK(cost.kernel_time(k, false).seconds == Approx(1234e-6));
  CHECK(cost.kernel_time(k, true).seconds == Approx(1234e-6));
  k.sig = {"layernorm", {262144}, "fp32"};
  CHECK(cost.kernel_time(k, false).seconds == Approx(77e-6));
  CHECK(cost.kernel_time(k, true).seconds == Approx(150e-6));  // the backward kernel's own entry
  k.sig = {"gelu", {262144}, "fp32"};                      // not profiled: the curves
  CHECK(cost.kernel_time(k, true).seconds > 0);
}

TEST_CASE("the profiler times exactly the workload model's forward kernels and GEMMs") {
  for (const auto& pm : rt::default_profile_models()) {
    if (pm.name == "gpt2-small-ish") continue;  // not a zoo model
    sim::WorkloadOptions wo;
    wo.batch = pm.batch;
    wo.seq = pm.seq;
    wo.dtype = "fp32";
    wo.flash_attention = false;
    const sim::Workload w = sim::build_workload(sim::resolve_model(pm.name), wo);
    std::vector<traces::OpSignature> want;
    auto add = [&](const traces::OpSignature& s) {
      if (std::find(want.begin(), want.end(), s) == want.end()) want.push_back(s);
    };
    for (const auto& b : w.blocks) {
      for (const auto& k : b.forward) add(k.sig);
      for (const auto& k : b.backward)
        if (k.sig.kind == "gemm") add(k.sig);
    }
    const auto got = rt::model_signatures(pm);
    INFO(pm.name << " batch " << pm.batch);
    CHECK(got.size() == want.size());
    for (const auto& s : want) CHECK(std::find(got.begin(), got.end(), s) != got.end());
  }
}

TEST_CASE("every non-GEMM kernel gets a backward signature, GEMMs none") {
  const std::vector<traces::OpSignature> fwd = {{"gemm", {8, 8, 8}, "fp32"},
                                                {"gelu", {64}, "fp32"},
                                                {"attention", {2, 16, 16, 8}, "fp32"},
                                                {"gelu_backward", {64}, "fp32"}};
  const auto bwd = rt::backward_signatures(fwd);
  REQUIRE(bwd.size() == 2);
  CHECK(bwd[0].key() == "gelu_backward:fp32:64");
  CHECK(bwd[1].key() == "attention_backward:fp32:2x16x16x8");
}

TEST_CASE("the runtime's own costs are host dispatch without a host thread: a chain of ops pays them on its stream") {
  rt::HostMeasurements m = sample();
  CHECK_FALSE(rt::machine_json(m).contains("host_dispatch"));  // not measured: no section
  m.runtime_op_us = 7;
  m.runtime_step_us = 300;
  const hw::Machine with = hw::machine_from_json(rt::machine_json(m), "profiled.json");
  REQUIRE(with.host_dispatch.enabled);
  CHECK_FALSE(with.host_dispatch.host_thread);
  CHECK(with.host_dispatch.runtime_op_us == 7);
  CHECK(with.host_dispatch.runtime_step_us == 300);
  CHECK(with.provenance_of("/host_dispatch").value("kind", "") == "measured");
  m.runtime_op_us = m.runtime_step_us = 0;
  const hw::Machine without = hw::machine_from_json(rt::machine_json(m), "profiled.json");

  // Oracle (closed form): a chain of n ops on one stream, each after the last, takes n x 7 us and
  // 300 us once more than without the costs; no host thread issues anything (no launch intervals).
  const int n = 40;
  const traces::Plan plan = testing::compute_chain(n, 1e6);
  const auto cost_with = hw::make_cost_model(with, nullptr), cost_without = hw::make_cost_model(without, nullptr);
  const traces::Report a = sim::PlanSimulator(*cost_with).run(plan), b = sim::PlanSimulator(*cost_without).run(plan);
  CHECK(a.iteration.ns - b.iteration.ns == n * 7000 + 300000);
  for (const traces::OpRecord& r : a.ops) CHECK_FALSE(r.launch.has_value());
  // Turned off with the section (--no-host-dispatch): as without.
  hw::Machine off = with;
  off.host_dispatch.enabled = false;
  CHECK(sim::PlanSimulator(*hw::make_cost_model(off, nullptr)).run(plan).iteration.ns == b.iteration.ns);
}
