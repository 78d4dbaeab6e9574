// Each rank's blocks timed beside its steps (issue 23, sim/calib/block_probes.h). Oracles: the
// train JSON's own numbers (sums by hand), the bootstrap distribution of a median of three level
// samples in closed form (as block_probes_test.cpp, here summed over two ranks), and for the
// prediction the simulator itself: a rank whose blocks ran 3x longer is the slowest, its compute
// stream busy longer by exactly the added time of every block op. The criteria (sim/calib/rank_cases.h)
// on noiseless steps, a level of known spread, a peak just over 5 %.
#include <catch2/catch.hpp>

#include "sim/calib/calibration.h"
#include "sim/calib/block_probes.h"
#include "sim/calib/rank_cases.h"
#include "sim/calib/rank_machine.h"
#include "hwmodels/hardware_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "tests/runtime/plan_fixtures.h"
#include "tests/calibrate/block_fixtures.h"
#include "traces/block_signature.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::calib;

namespace {

using testing::kHead;
using testing::kLayer;

nlohmann::json series(const traces::OpSignature& sig, const std::vector<double>& us) {
  return {{"signature", sig.key()}, {"us", us}};
}

// A `train --block-probes --json` output of two ranks.
nlohmann::json train_json(const std::vector<double>& layer0, const std::vector<double>& head0,
                          const std::vector<double>& layer1, const std::vector<double>& head1) {
  return {{"rank_block_probes",
           {{series(kLayer, layer0), series(kHead, head0)}, {series(kLayer, layer1), series(kHead, head1)}}}};
}

}  // namespace

TEST_CASE("rank block probes: every run's blocks are kept per rank, the level after a step sums every rank's blocks") {
  std::vector<BlockProbes> ranks;
  add_rank_block_probes(ranks, train_json({40, 44}, {3, 2}, {41, 45}, {4, 3}), "ranks-fsdp/train-r0.json");
  add_rank_block_probes(ranks, train_json({50}, {5}, {52}, {6}), "ranks-ddp/train-r0.json");
  add_rank_block_probes(ranks, nlohmann::json::object(), "no-probes.json");  // adds nothing
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].us.at(kLayer.key()) == std::vector<double>{40, 44, 50});
  CHECK(ranks[1].us.at(kHead.key()) == std::vector<double>{4, 3, 6});
  CHECK(ranks[0].level_us == std::vector<double>{43, 46, 55});
  CHECK(ranks[1].level_us == std::vector<double>{45, 48, 58});
  CHECK(summed_level(ranks) == std::vector<double>{88, 94, 113});
  CHECK(summed_level(ranks, 2) == std::vector<double>{113});  // the second run's samples alone
  CHECK(summed_level({}).empty());
}

TEST_CASE("rank block probes: another rank count, uneven series or other blocks are refused, naming the file and pointer") {
  std::vector<BlockProbes> ranks;
  add_rank_block_probes(ranks, train_json({40, 44}, {3, 2}, {41, 45}, {4, 3}), "a.json");
  auto refused = [&](const nlohmann::json& j, const std::string& pointer) {
    std::vector<BlockProbes> copy = ranks;
    try {
      add_rank_block_probes(copy, j, "b.json");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("b.json:" + pointer));
    }
  };
  refused({{"rank_block_probes", {{series(kLayer, {1}), series(kHead, {1})}}}}, "/rank_block_probes");
  refused(train_json({40, 44}, {3, 2}, {41, 45}, {4}), "/rank_block_probes/1/1/us");
  refused({{"rank_block_probes", {{series(kLayer, {1})}, {series(kLayer, {1})}}}}, "/rank_block_probes/0");
  const traces::OpSignature other =
      traces::block_signature({"backward", "layer", "gpt2", 4, 256, 256, 4, 4, 1024, 256}, "fp32");
  refused({{"rank_block_probes", {{series(kLayer, {1}), series(other, {1})}, {series(kLayer, {1}), series(kHead, {1})}}}},
          "/rank_block_probes/0/1/signature");
}

TEST_CASE("rank block probes: the intervals carry both ranks' summed level, a median of three in closed form") {
  // As block_probes_test.cpp: noiseless steps at the predictions; both ranks' levels 45 / 50 / 55
  // sum to 90 / 100 / 110, whose bootstrap median is 100 with probability 13/27 and 90 or 110 with
  // 7/27 each: MAPE [0, 0.075] for sensitivities 1 and 0.5, max error [0, 0.1].
  std::vector<BlockProbes> ranks;
  add_rank_block_probes(ranks, train_json({40, 44, 48}, {5, 6, 7}, {42, 45, 49}, {3, 5, 6}), "r.json");
  const std::vector<double> level = summed_level(ranks);
  REQUIRE(level == std::vector<double>{90, 100, 110});
  const Groups steps = {{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}};
  const MetricsWithIntervals ci = iteration_metrics_with_intervals({1.0, 2.0}, {1.0, 0.5}, level, steps, 2000, 3);
  CHECK(ci.point[kMape] == 0);
  CHECK(ci.interval[kMape].lo == Approx(0).margin(1e-12));
  CHECK(ci.interval[kMape].hi == Approx(0.075));
  CHECK(ci.interval[kMaxError].hi == Approx(0.1));
  CHECK(judge_at_most(ci.interval[kMape], 0.05) == Verdict::kUndecided);
}

TEST_CASE("rank block probes: each rank is predicted at its own blocks, the step is the slowest rank's") {
  // gpt2-tiny's 2-GPU all-resident plan on the 2-rank emulated machine, its blocks in the profile
  // at 1 ms; rank 0's runs beside the steps at 2 ms, rank 1's at 6 ms (a 3x slower device).
  const sim::Workload w = rt::testing::tiny_workload("gpt2-tiny");
  const traces::Plan plan = rt::testing::resident_plan(w, 2);
  const hw::Machine m = machine_for_ranks(hw::load_machine("host-emulated"), 2, 1.0);
  traces::OpProfile profile = traces::shipped_profile("host-emulated");
  std::vector<std::string> blocks;
  for (const traces::Op& op : plan.ops)
    if (auto sig = traces::block_signature(plan, op)) {
      if (profile.find(*sig)) continue;
      traces::OpProfileEntry e;
      e.sig = *sig;
      e.us.add(1000);
      profile.add(e);
      blocks.push_back(sig->key());
    }
  REQUIRE(blocks.size() == 6);  // embedding, layer, head; forward and backward
  auto probes = [&](double us) {
    BlockProbes b;
    for (const std::string& k : blocks) b.us[k] = {us, us, us};
    return b;
  };
  const std::vector<sim::ContentionRule> none;
  const RankBlocksPrediction even = predict_at_rank_blocks(plan, m, profile, none, {probes(2000), probes(2000)});
  const RankBlocksPrediction slow = predict_at_rank_blocks(plan, m, profile, none, {probes(2000), probes(6000)});
  // The simulator with the profile's blocks at the rank's medians.
  auto simulate = [&](double factor, double then = 1) {
    const traces::OpProfile p = with_blocks_scaled(with_blocks_scaled(profile, factor), then);
    return sim::PlanSimulator(*hw::make_cost_model(m, &p), none).run(plan);
  };
  CHECK(even.rank_s[0] == even.rank_s[1]);
  CHECK(even.slowest == 0);
  CHECK(even.iteration_s == simulate(2).iteration.seconds());
  CHECK(slow.slowest == 1);
  CHECK(slow.rank_s[0] == even.rank_s[0]);
  CHECK(slow.iteration_s == simulate(6).iteration.seconds());
  // Closed form: rank 1's compute stream is busy 4 ms longer for every block op of the plan.
  int block_ops = 0;
  for (const traces::Op& op : plan.ops) block_ops += traces::block_signature(plan, op) ? 1 : 0;
  CHECK(block_ops >= 6);
  CHECK(slow.report.stream("compute")->busy.seconds() - even.report.stream("compute")->busy.seconds() ==
        Approx(block_ops * 4e-3).epsilon(1e-9));
  // Its sensitivity: every block of every rank 5 % longer.
  CHECK(predict_at_rank_blocks(plan, m, profile, none, {probes(2000), probes(6000)}, 1.05).iteration_s ==
        simulate(6, 1.05).iteration.seconds());
}

TEST_CASE("rank criteria: met only when every interval and every plan's device peak are, else calibrate exits 3, another round only while undecided") {
  // Noiseless steps at the predictions: intervals [0, 0] and Spearman [1, 1] without a level.
  const std::vector<double> pred = {1.0, 2.0, 3.0};
  const Groups steps = {{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}, {3.0, 3.0, 3.0}};
  const nlohmann::json met = judge_rank_criteria(pred, {1, 1, 1}, {}, steps, 0.031, 500, 1);
  CHECK(met["criteria_met"] == true);
  CHECK(rank_criteria_met(met));
  CHECK(met["verdicts"]["iteration_time_mape"] == "met");
  CHECK(met["intervals"]["block_level_samples"] == 0);
  // The blocks' level 90 / 100 / 110, every plan moving fully with it: MAPE [0, 0.1] straddles
  // 5 %, undecided, so missed.
  const nlohmann::json level = judge_rank_criteria(pred, {1, 1, 1}, {90, 100, 110}, steps, 0.0, 2000, 3);
  CHECK(level["verdicts"]["iteration_time_mape"] == "undecided");
  CHECK(level["intervals"]["iteration_time_mape"][1].get<double>() == Approx(0.1));
  CHECK_FALSE(rank_criteria_met(level));
  // A plan's device peak 5.1 % off.
  const nlohmann::json peak = judge_rank_criteria(pred, {1, 1, 1}, {}, steps, 0.051, 500, 1);
  CHECK(peak["verdicts"]["peak_device_max_error"] == "NOT met");
  CHECK_FALSE(rank_criteria_met(peak));
  // Every plan predicted 20 % slow: MAPE's whole interval above 5 %.
  const nlohmann::json slow = judge_rank_criteria({1.2, 2.4, 3.6}, {1, 1, 1}, {}, steps, 0.0, 500, 1);
  CHECK(slow["verdicts"]["iteration_time_mape"] == "NOT met");
  CHECK_FALSE(rank_criteria_met(slow));
  // Only the straddling interval asks calibrate for another round (--rank-budget-s); a miss or a
  // peak beyond 5 % does not, nor does a section without verdicts.
  CHECK(rank_criteria_undecided(level));
  CHECK_FALSE(rank_criteria_undecided(met));
  CHECK_FALSE(rank_criteria_undecided(slow));
  CHECK_FALSE(rank_criteria_undecided(peak));
  CHECK_FALSE(rank_criteria_undecided({{"error", "mpirun not found on PATH"}}));
  // A section that did not run (no mpirun) has no criteria: missed.
  CHECK_FALSE(rank_criteria_met({{"error", "mpirun not found on PATH"}}));
  CHECK(kRankCriteriaMissedExit == 3);
}

TEST_CASE("rank sweeps: step s of every plan's round-r run is one sweep, the warm-up step left out") {
  // Two plans, two rounds of 3 steps each: levels [plan][run][step].
  const std::vector<std::vector<std::vector<double>>> levels = {{{9, 10, 11}, {9, 12, 13}},
                                                                {{9, 20, 21}, {9, 22, 23}}};
  CHECK(rank_sweep_levels(levels) == std::vector<std::vector<double>>{{10, 20}, {11, 21}, {12, 22}, {13, 23}});
  // A plan with one run fewer, a run with another step count, or no block probes: not paired.
  CHECK(rank_sweep_levels({{{9, 10, 11}, {9, 12, 13}}, {{9, 20, 21}}}).empty());
  CHECK(rank_sweep_levels({{{9, 10, 11}}, {{9, 20}}}).empty());
  CHECK(rank_sweep_levels({{{}}, {{}}}).empty());
  CHECK(rank_sweep_levels({}).empty());
}

TEST_CASE("rank criteria on whole sweeps: a level shared by a sweep's steps and blocks cancels") {
  // Every plan's step k and the blocks after it at the machine's speed d[k] then; each plan
  // predicted at its base x median(d), moving fully with the blocks: every replicate of whole
  // sweeps predicts its measured median exactly, so MAPE [0, 0]; each plan resampled alone does not.
  const std::vector<double> d = {1.0, 1.2, 0.9, 1.1, 1.3}, base = {1.0, 2.0, 3.0};
  Groups steps(3);
  std::vector<std::vector<double>> sweeps;
  std::vector<double> flat;
  for (double x : d) {
    for (size_t i = 0; i < 3; ++i) steps[i].push_back(base[i] * x);
    sweeps.push_back({100 * x, 100 * x, 100 * x});
    flat.insert(flat.end(), 3, 100 * x);
  }
  const std::vector<double> pred = {1.1, 2.2, 3.3};
  const nlohmann::json paired = judge_rank_criteria(pred, {1, 1, 1}, flat, steps, 0.0, 2000, 3, sweeps);
  CHECK(paired["intervals"]["iteration_time_mape"][1].get<double>() == Approx(0).margin(1e-12));
  CHECK(paired["criteria_met"] == true);
  CHECK_THAT(paired["intervals"]["resample"].get<std::string>(), Catch::StartsWith("sweeps"));
  const nlohmann::json alone = judge_rank_criteria(pred, {1, 1, 1}, flat, steps, 0.0, 2000, 3);
  CHECK(alone["intervals"]["iteration_time_mape"][1].get<double>() > 0.05);
  CHECK(alone["criteria_met"] == false);
  CHECK_THAT(alone["intervals"]["resample"].get<std::string>(), Catch::StartsWith("steps within each plan"));
}
