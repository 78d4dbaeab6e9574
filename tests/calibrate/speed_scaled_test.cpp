// Predictions at the machine's speed of the moment (sim/calib/speed_scaled_prediction.h, issue 22).
// Oracles: closed forms (the scales, a step at the reference speeds), the plain simulator at the
// reference, and an all-compute plan whose iteration is its compute ops' sum, so it doubles when
// compute runs at half speed.
#include <catch2/catch.hpp>

#include "sim/calib/speed_scaled_prediction.h"
#include "hwmodels/machine.h"
#include "sim/engine/plan_simulator.h"
#include "sim/workload/model_spec.h"
#include "tests/calibrate/chain_plan.h"
#include "tests/runtime/plan_fixtures.h"
#include "traces/op_profile.h"

using namespace protwin;

namespace {
sim::Workload eager_tiny() {
  sim::WorkloadOptions wo;
  wo.batch = 4;
  wo.seq = 64;
  wo.dtype = "fp32";
  wo.flash_attention = false;
  return sim::build_workload(sim::resolve_model("gpt2-tiny"), wo);
}
}  // namespace

TEST_CASE("the probes' reference speeds come from the profile's provenance, 0 when missing") {
  const nlohmann::json prov = {{"reference_probe", {{"median_gflops", 150.0}}},
                               {"reference_copy_probe", {{"median_GBps", 0.25}}}};
  const calib::ProbeSpeeds r = calib::probe_references(prov);
  CHECK(r.gemm_gflops == 150.0);
  CHECK(r.copy_gbps == 0.25);
  CHECK(r.adam_mparams_per_s == 0.0);
}

TEST_CASE("each resource's time multiplier is reference speed / speed then, a step scales by the predictions") {
  const calib::ResourceScales s = calib::scales_of({75, 0.5, 400}, {150, 0.25, 800});
  CHECK(s.compute == Approx(2.0));
  CHECK(s.copy == Approx(0.5));
  CHECK(s.cpu == Approx(2.0));
  CHECK(calib::at_reference_speeds(0.3, 0.2, 0.4) == Approx(0.15));
  CHECK_THROWS(calib::scales_of({0, 1, 1}, {1, 1, 1}));
}

TEST_CASE("a plan predicted at the reference speeds is the plain simulation, all-compute doubles at half speed") {
  const sim::Workload w = eager_tiny();
  const hw::Machine m = hw::load_machine("host-emulated");
  const traces::OpProfile profile = traces::shipped_profile("host-emulated");
  const traces::Plan resident = rt::testing::resident_plan(w);
  const auto cost = hw::make_cost_model(m, &profile);
  const double plain = sim::PlanSimulator(*cost).run(resident).iteration.seconds();
  calib::SpeedScaledPredictor pred(resident, m, &profile, {});
  CHECK(pred.iteration_s({}) == Approx(plain).epsilon(1e-12));
  CHECK(pred.iteration_s({1.001, 1, 1}) == pred.iteration_s({}));  // within one 0.5 % bin
  // The resident plan copies nothing and runs no CPU Adam: only compute moves it.
  CHECK(pred.iteration_s({1, 3, 3}) == Approx(plain).epsilon(1e-9));
  CHECK(pred.iteration_s({2, 1, 1}) == Approx(2 * plain).epsilon(0.01));
}

TEST_CASE("an offloading plan slows with its link, by less than the link") {
  const sim::Workload w = eager_tiny();
  sim::offload::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 2;
  const traces::Plan offloaded = rt::testing::compile_plan(w, k);
  const hw::Machine m = hw::load_machine("host-emulated");
  calib::SpeedScaledPredictor pred(offloaded, m, nullptr, {});
  const double t1 = pred.iteration_s({}), t2 = pred.iteration_s({1, 2, 1});
  CHECK(t2 > 1.05 * t1);
  CHECK(t2 < 2 * t1);
}

TEST_CASE("the runtime's own work is host CPU work: it follows the CPU probe, not the GEMM's") {
  // Oracle (closed form): a chain of n compute ops on one stream with the runtime's costs (n x op
  // + step) gains exactly (n x op + step) x (cpu scale - 1) when the CPU slows, and nothing of
  // it when only compute slows (the compute part alone doubles).
  nlohmann::json j = hw::load_machine("host-emulated").json;
  j["host_dispatch"] = {{"host_thread", false}, {"runtime_op_us", 10.0}, {"runtime_step_us", 500.0},
                        {"eager_op_us", 0.0}, {"eager_op_autograd_us", 0.0}, {"backward_op_us", 0.0},
                        {"kernel_launch_us", 0.0}, {"copy_call_us", 0.0}, {"collective_call_us", 0.0},
                        {"optimizer_launch_us", 0.0}, {"module_hook_us", 0.0}, {"launch_queue_depth", 1024}};
  j["provenance"]["/host_dispatch"] = {{"kind", "assumed"}, {"source", "this test"}};
  const hw::Machine m = hw::machine_from_json(j, "with-runtime-costs");
  const hw::Machine cpu2 = calib::scaled_machine(m, {{"compute", 1}, {"h2d", 1}, {"d2h", 1}, {"cpu_optim", 2}});
  CHECK(cpu2.host_dispatch.runtime_op_us == 20.0);
  CHECK(cpu2.host_dispatch.runtime_step_us == 1000.0);
  const hw::Machine gemm2 = calib::scaled_machine(m, {{"compute", 2}, {"h2d", 1}, {"d2h", 1}, {"cpu_optim", 1}});
  CHECK(gemm2.host_dispatch.runtime_op_us == 10.0);

  const int n = 30;
  const traces::Plan plan = testing::compute_chain(n, 1e8);
  calib::SpeedScaledPredictor pred(plan, m, nullptr, {});
  const double base = pred.iteration_s({}), runtime = (n * 10.0 + 500.0) * 1e-6;
  // (the predictor rounds scales to 0.5 %)
  CHECK(pred.iteration_s({1, 1, 2}) - base == Approx(runtime).epsilon(0.005));
  CHECK(pred.iteration_s({2, 1, 1}) == Approx(2 * (base - runtime) + runtime).epsilon(0.005));
  CHECK(pred.iteration_s({2, 1, 1}) < 2 * base - runtime * 0.5);  // not the whole step doubled
}
