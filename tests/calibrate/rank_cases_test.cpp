// calibrate --ranks's predictions and comparisons (sim/calib/rank_cases.h). Oracles: the direct
// simulation of the same plan (the rank profile's, the speed-scaled predictor at each rank's probed
// speeds), a measurement equal to the prediction (every busy error 0), and the section's metrics by
// hand on made-up cases.
#include <catch2/catch.hpp>

#include "sim/calib/calibration.h"
#include "sim/calib/rank_cases.h"
#include "sim/calib/rank_machine.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/runtime_memory.h"
#include "sim/offload/compiler/systems.h"
#include "sim/workload/model_spec.h"

using namespace protwin;
using namespace protwin::calib;

namespace {

sim::Workload tiny() {
  sim::WorkloadOptions wo;
  wo.batch = 2;
  wo.dtype = "fp32";
  wo.flash_attention = false;
  return sim::build_workload(sim::resolve_model("gpt2-tiny"), wo);
}

// The search's result for one knob setting on 2 GPUs: its plan and report.
sim::offload::SearchResult searched(const sim::Workload& w, const hw::HardwareCostModel& cost,
                                    const sim::offload::OffloadKnobs& k) {
  sim::offload::SearchResult sr;
  sr.found = true;
  sr.best = sim::offload::evaluate(w, cost, 2, k, &sr.best_plan, &sr.best_report);
  REQUIRE(sr.best.simulated);
  return sr;
}

// A profile with its reference probes: 100 GFLOPS, 1 GB/s, 500 M params/s.
traces::OpProfile with_references(traces::OpProfile p) {
  nlohmann::json prov = p.provenance();
  prov["reference_probe"] = {{"median_gflops", 100.0}};
  prov["reference_copy_probe"] = {{"median_GBps", 1.0}};
  prov["reference_adam_probe"] = {{"median_mparams_per_s", 500.0}};
  p.set_provenance(prov);
  return p;
}

// One measured step's probes of a rank, before and after alike.
nlohmann::json probe(double gflops, double gbps, double mparams) {
  return {{"gemm_before_gflops", gflops}, {"gemm_after_gflops", gflops}, {"copy_before_GBps", gbps},
          {"copy_after_GBps", gbps}, {"adam_before_mparams_per_s", mparams}, {"adam_after_mparams_per_s", mparams}};
}

}  // namespace

TEST_CASE("a rank plan's prediction is the search's report, or the rank profile's simulation with its contention") {
  const sim::Workload w = tiny();
  const hw::Machine m = machine_for_ranks(hw::load_machine("host-emulated"), 2, 1.0);
  const traces::OpProfile profile = *hw::load_op_profile("host-emulated");
  const auto cost = hw::make_cost_model(m, &profile);
  const sim::offload::SearchResult sr = searched(w, *cost, sim::offload::base_knobs("ddp"));
  RankPredictors p;
  p.machine = &m;
  RankPlanPrediction got = predict_rank_plan(sr, p, {});
  CHECK(got.report.iteration.seconds() == sr.best_report.iteration.seconds());
  CHECK(got.json.at("predicted_s").get<double>() == sr.best_report.iteration.seconds());
  CHECK(got.json.at("searched_s").get<double>() == sr.best.iteration_s);
  CHECK(got.json.at("knobs") == sim::offload::base_knobs("ddp").to_json());
  CHECK_FALSE(got.json.contains("at_rank_blocks"));
  // With a rank profile: its cost model and contention rules (sim/engine/plan_simulator.h).
  const hw::Machine slow = scaled_machine(m, {{"compute", 1.5}, {"h2d", 1}, {"d2h", 1}, {"cpu_optim", 1}});
  const auto rank_cost = hw::make_cost_model(slow, &profile, 1.5);
  p.rank_profile = &profile;
  p.rank_machine = &slow;
  p.rank_cost = rank_cost.get();
  p.contention = hw::contention_rules_from_profile(profile.provenance());
  REQUIRE_FALSE(p.contention.empty());
  got = predict_rank_plan(sr, p, {});
  const double direct = sim::PlanSimulator(*rank_cost, p.contention).run(sr.best_plan.plan).iteration.seconds();
  CHECK(got.json.at("predicted_s").get<double>() == direct);
  CHECK(direct > sr.best_report.iteration.seconds());  // compute 1.5x slower
}

TEST_CASE("a rank case measured as predicted: no busy error, memory by the runtime's tensors, each rank at its probed speed") {
  const sim::Workload w = tiny();
  const hw::Machine m = machine_for_ranks(hw::load_machine("host-emulated"), 2, 1.0);
  const traces::OpProfile profile = with_references(*hw::load_op_profile("host-emulated"));
  const auto cost = hw::make_cost_model(m, &profile);
  sim::offload::OffloadKnobs k = sim::offload::base_knobs("protrain");
  const sim::offload::SearchResult sr = searched(w, *cost, k);
  RankPredictors p;
  p.machine = &m;
  p.one_rank_profile = &profile;
  const traces::Report& predicted = sr.best_report;
  const double t = predicted.iteration.seconds();
  RankCaseRuns runs;
  runs.rank0 = predicted;
  runs.runs = {{"iteration_s", {0.9 * t, t, 1.2 * t}},
               {"peak_device_bytes", 1000},
               {"peak_device_reserved_bytes", 2000},
               {"peak_pinned_bytes", 400},
               {"peak_pageable_bytes", 0},
               // rank 0 at the reference speeds, rank 1's GEMM at half of it (two steps each)
               {"rank_probes", {{probe(100, 1, 500), probe(100, 1, 500)}, {probe(50, 1, 500), probe(50, 1, 500)}}}};
  const nlohmann::json c = compare_rank_case(sr, predicted, p, runs);
  CHECK(c.at("measured_s").get<double>() == t);
  CHECK(c.at("iteration_error").get<double>() == 0);
  REQUIRE(c.at("busy").contains("compute"));
  for (const auto& b : c.at("busy")) CHECK(b.at("error").get<double>() == 0);
  const nlohmann::json& g = c.at("memory").at("gpu");
  const int64_t tensors = sim::offload::predict_runtime_memory(sr.best_plan.plan, predicted).allocated_peak_bytes;
  CHECK(g.at("predicted_bytes").get<int64_t>() == tensors);
  CHECK(g.at("measured_bytes").get<int64_t>() == 1000);
  CHECK(g.at("error").get<double>() == Approx((tensors - 1000) / 1000.0));
  CHECK(g.at("plan_bytes").get<int64_t>() == predicted.pool("gpu")->peak.n);
  CHECK(g.at("analytic_bytes").get<int64_t>() == sr.best.analytic_peak_gpu_bytes);
  CHECK(g.at("measured_reserved_bytes").get<int64_t>() == 2000);
  CHECK(c.at("memory").at("pinned").at("predicted_bytes").get<int64_t>() == predicted.pool("pinned")->peak.n);
  // Each rank alone at its speed: rank 0 the plain prediction, rank 1's compute twice as long and
  // the slowest (sim/calib/speed_scaled_prediction.h).
  SpeedScaledPredictor direct(sr.best_plan.plan, m, &profile, hw::contention_rules_from_profile(profile.provenance()));
  const nlohmann::json& s = c.at("at_rank_speeds");
  CHECK(s.at("ranks")[0].at("compute_scale").get<double>() == 1);
  CHECK(s.at("ranks")[1].at("compute_scale").get<double>() == 2);
  CHECK(s.at("ranks")[0].at("predicted_s").get<double>() == direct.iteration_s({1, 1, 1}));
  CHECK(s.at("predicted_s").get<double>() == direct.iteration_s({2, 1, 1}));
  CHECK(s.at("predicted_s").get<double>() > s.at("ranks")[0].at("predicted_s").get<double>());
  CHECK(c.at("joint").at("ranks").size() == 2);  // both ranks probed: the joint simulation too
  CHECK_FALSE(c.contains("interleaved"));
}

TEST_CASE("the rank section's metrics by hand: failed cases left out, each prediction against its measurement") {
  auto made_up = [](double predicted, double measured, int64_t pred_gpu, int64_t meas_gpu) {
    return nlohmann::json{{"predicted_s", predicted},
                          {"measured_s", measured},
                          {"measured_steps_s", {measured, measured, measured}},
                          {"memory", {{"gpu", {{"predicted_bytes", pred_gpu}, {"measured_bytes", meas_gpu},
                                               {"analytic_bytes", meas_gpu}, {"plan_bytes", meas_gpu / 2}}}}}};
  };
  nlohmann::json a = made_up(1.1, 1.0, 110, 100), b = made_up(2.0, 2.0, 200, 200);
  a["joint"] = {{"predicted_s", 0.8}};
  b["joint"] = {{"predicted_s", 2.0}};
  a["at_rank_speeds"] = {{"predicted_s", 1.0}};
  b["interleaved"] = {{"predicted_s", 2.2}, {"measured_s", 2.0}};
  const nlohmann::json cases = {{{"system", "ddp"}, {"error", "mpirun exit 1"}}, a, b};
  const nlohmann::json s = rank_section_metrics(cases, {{}, {}}, {}, nullptr, 6, 200, 1);
  const nlohmann::json& m = s.at("metrics");
  CHECK(m.at("cases") == 2);
  CHECK(m.at("iteration_time_mape").get<double>() == Approx(0.05));  // (10 % + 0) / 2
  CHECK(m.at("iteration_time_max_error").get<double>() == Approx(0.1));
  CHECK(m.at("spearman").get<double>() == Approx(1));
  CHECK(m.at("peak_device_mape").get<double>() == Approx(0.05));
  CHECK(m.at("analytic_peak_device_mape").get<double>() == 0);
  CHECK(m.at("plan_peak_device_mape").get<double>() == Approx(0.5));
  CHECK(s.contains("criteria_met"));
  CHECK(s.at("metrics_joint").at("iteration_time_mape").get<double>() == Approx(0.1));  // (20 % + 0) / 2
  CHECK(s.at("metrics_at_rank_speeds").at("cases") == 1);
  CHECK(s.at("metrics_at_rank_speeds").at("iteration_time_mape").get<double>() == 0);
  CHECK(s.at("metrics_interleaved").at("iteration_time_mape").get<double>() == Approx(0.1));
  CHECK(s.at("metrics_interleaved").at("steps") == 6);
  CHECK_FALSE(s.contains("metrics_profile_blocks"));
  CHECK_FALSE(s.contains("metrics_interleaved_launch_speeds"));
  CHECK_FALSE(s.contains("block_probes"));
}
