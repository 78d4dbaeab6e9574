// calibrate's predictions of its cases (sim/calib/case_comparison.h). Oracles: the pooled profile's
// contention factors and blocks by hand (medians of three rounds), and every prediction equal to
// the direct simulation of the same knobs with the profile variant it names (simulate_case).
#include <catch2/catch.hpp>

#include "sim/calib/calibration.h"
#include "sim/calib/case_comparison.h"
#include "sim/calib/speed_scaled_prediction.h"
#include "sim/offload/compiler/systems.h"
#include "sim/workload/model_spec.h"
#include "tests/calibrate/block_fixtures.h"
#include "traces/block_signature.h"

using namespace protwin;
using namespace protwin::calib;

namespace {

using testing::kGemm;

traces::OpProfile round_profile(double layer_us, double copies, double adam, double adam_beside, const std::string& note) {
  traces::OpProfile p = testing::measured_profile({{testing::kLayer, layer_us}, {kGemm, 10.0}});
  p.set_provenance({{"kind", "measured"},
                    {"note", note},
                    {"contention",
                     {{"compute_slowdown_with_copies", copies},
                      {"compute_slowdown_with_adam", adam},
                      {"adam_slowdown_with_compute", adam_beside}}}});
  return p;
}

}  // namespace

TEST_CASE("the pooled profile: each contention factor the rounds' median, blocks at their runs beside the steps") {
  const std::vector<traces::OpProfile> rounds = {round_profile(40, 1.1, 1.5, 2.0, "first"),
                                                 round_profile(60, 1.3, 1.4, 3.0, "second"),
                                                 round_profile(50, 1.2, 1.6, 1.0, "third")};
  traces::OpProfile merged = rounds[0];
  merged.merge(rounds[1]);
  merged.merge(rounds[2]);
  BlockProbes probes;
  add_block_probes(probes, {{"block_probes", {{{"signature", testing::kLayer.key()}, {"us", {40, 90, 42, 41}}}}}}, "r0.json");
  traces::OpProfile profile_blocks;
  const traces::OpProfile p = pooled_profile(merged, rounds, probes, &profile_blocks);
  const nlohmann::json& c = p.provenance().at("contention");
  CHECK(c.at("compute_slowdown_with_copies").get<double>() == 1.2);
  CHECK(c.at("compute_slowdown_with_adam").get<double>() == 1.5);
  CHECK(c.at("adam_slowdown_with_compute").get<double>() == 2.0);
  CHECK(p.provenance().at("note") ==
        "first; pooled over 3 profiles interleaved with protwin calibrate's rounds (contention: medians)");
  CHECK(p.find(testing::kLayer)->us.mean == Approx(41.5));  // median of 40 41 42 90 beside the steps
  CHECK(p.find(kGemm)->us.mean == 10);
  CHECK(p.find(kGemm)->us.count == 3);  // the pooled timings
  CHECK(profile_blocks.find(testing::kLayer)->us.mean == 50);  // median of the rounds' 40 60 50
  CHECK(profile_blocks.provenance() == p.provenance());
  // Without block probes the pooled blocks stay.
  CHECK(pooled_profile(merged, rounds, BlockProbes{}).find(testing::kLayer)->us.mean == Approx(50));
}

TEST_CASE("each case's predictions are the direct simulations with the profile, its kernels, its blocks up 5 % and the profiles' blocks") {
  sim::WorkloadOptions wo;
  wo.batch = 4;
  wo.dtype = "fp32";
  wo.flash_attention = false;
  const sim::Workload w = sim::build_workload(sim::resolve_model("gpt2-tiny"), wo);
  const hw::Machine m = with_capacity(hw::load_machine("host-emulated"), kUncappedDeviceBytes);
  traces::OpProfile profile = *hw::load_op_profile("host-emulated");
  const std::vector<sim::ContentionRule> rules = hw::contention_rules_from_profile(profile.provenance());
  sim::offload::OffloadKnobs offload = sim::offload::base_knobs("protrain");
  offload.n_persist = 1;
  const std::vector<sim::offload::OffloadKnobs> knobs = {sim::offload::base_knobs("ddp"), offload};
  // Every block of the plans at 3 ms: whole-block entries the kernels-only variant leaves out.
  for (const auto& k : knobs) {
    const SimulatedCase s = simulate_case(w, *hw::make_cost_model(m, &profile), k);
    for (const traces::Op& op : s.plan.plan.ops)
      if (const auto sig = traces::block_signature(s.plan.plan, op); sig && !profile.find(*sig)) {
        traces::OpProfileEntry e;
        e.sig = *sig;
        e.us.add(3000);
        profile.add(e);
      }
  }
  const traces::OpProfile profile_blocks = with_blocks_scaled(profile, 2);
  const std::vector<CasePrediction> got = predict_cases(w, m, &profile, &profile_blocks, knobs, rules);
  REQUIRE(got.size() == 2);
  auto with_rules = [&](const traces::OpProfile* p) {
    auto cost = hw::make_cost_model(m, p);
    cost->set_contention(rules);
    return cost;
  };
  auto direct = [&](const traces::OpProfile* p, const sim::offload::OffloadKnobs& k) {
    return simulate_case(w, *with_rules(p), k).iteration_s;
  };
  const traces::OpProfile kernels = traces::without_blocks(profile), up = with_blocks_scaled(profile, kBlockStep);
  for (size_t i = 0; i < knobs.size(); ++i) {
    const CasePrediction& g = got[i];
    const double predicted = direct(&profile, knobs[i]);
    CHECK(g.sim.iteration_s == predicted);
    CHECK(g.sim.busy == simulate_case(w, *with_rules(&profile), knobs[i]).busy);
    CHECK(g.kernels_predicted_s == direct(&kernels, knobs[i]));
    CHECK(g.kernels_predicted_s != predicted);
    CHECK(g.profile_blocks_predicted_s == direct(&profile_blocks, knobs[i]));
    CHECK(g.profile_blocks_predicted_s > predicted);  // every block twice as long
    CHECK(g.block_sensitivity == Approx((direct(&up, knobs[i]) / predicted - 1) / (kBlockStep - 1)));
    CHECK(g.block_sensitivity > 0);
    CHECK(g.block_sensitivity <= 1.0 + 1e-9);  // the blocks are part of the step
  }
  // Blocks not sampled beside the steps: no sensitivity, the profile-blocks variant is the prediction.
  const std::vector<CasePrediction> unsampled = predict_cases(w, m, &profile, nullptr, knobs, rules);
  CHECK(unsampled[1].block_sensitivity == 0);
  CHECK(unsampled[1].profile_blocks_predicted_s == unsampled[1].sim.iteration_s);
  CHECK(unsampled[1].sim.iteration_s == got[1].sim.iteration_s);
}
