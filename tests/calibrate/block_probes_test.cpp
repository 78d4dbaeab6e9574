// The blocks timed beside the steps (issue 22, sim/calib/block_probes.h) and the intervals that carry
// how sure the prediction's block level is. Oracles: the interleave JSON's own numbers (sums and
// medians by hand), and the bootstrap distribution of a median of three values in closed form.
#include <catch2/catch.hpp>

#include "sim/calib/block_probes.h"
#include "sim/calib/calibration.h"
#include "tests/calibrate/block_fixtures.h"
#include "traces/block_signature.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::calib;

namespace {

using testing::kHead;
using testing::kLayer;
using testing::kGemm;

nlohmann::json interleave_json(const std::vector<double>& layer, const std::vector<double>& head) {
  return {{"block_probes",
           {{{"signature", kLayer.key()}, {"us", layer}}, {{"signature", kHead.key()}, {"us", head}}}}};
}

traces::OpProfile profile_of(double layer_us, double head_us, double gemm_us) {
  return testing::measured_profile({{kLayer, layer_us}, {kHead, head_us}, {kGemm, gemm_us}});
}

}  // namespace

TEST_CASE("block probes: every round's runs are kept per block, the sum after each step is one level sample") {
  BlockProbes b;
  add_block_probes(b, interleave_json({40, 44, 42}, {3, 2, 4}), "r0.json");
  add_block_probes(b, interleave_json({50, 46}, {5, 3}), "r1.json");
  add_block_probes(b, nlohmann::json::object(), "r2.json");  // a run without block probes adds nothing
  CHECK(b.us.at(kLayer.key()) == std::vector<double>{40, 44, 42, 50, 46});
  CHECK(b.us.at(kHead.key()) == std::vector<double>{3, 2, 4, 5, 3});
  CHECK(b.level_us == std::vector<double>{43, 46, 46, 55, 49});
}

TEST_CASE("block probes: series of different lengths are refused, naming the file and pointer") {
  BlockProbes b;
  try {
    add_block_probes(b, interleave_json({40, 44, 42}, {3, 2}), "out/interleave-r1.json");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("out/interleave-r1.json:/block_probes/1/us"));
    CHECK_THAT(e.what(), Catch::Contains("expected 3"));
  }
}

TEST_CASE("block probes: the prediction takes each sampled block at its median, other entries unchanged") {
  BlockProbes b;
  add_block_probes(b, interleave_json({40, 90, 42, 41}, {3, 2, 4, 5}), "r0.json");
  const traces::OpProfile p = with_block_probes(profile_of(55, 7, 10), b);
  CHECK(p.find(kLayer)->us.mean == Approx(41.5));  // median of 40 41 42 90: the preempted run left out
  CHECK(p.find(kLayer)->us.count == 1);
  CHECK(p.find(kHead)->us.mean == Approx(3.5));
  CHECK(p.find(kGemm)->us.mean == 10);
  const traces::OpProfile up = with_blocks_scaled(p, 1.05);
  CHECK(up.find(kLayer)->us.mean == Approx(41.5 * 1.05));
  CHECK(up.find(kHead)->us.mean == Approx(3.5 * 1.05));
  CHECK(up.find(kGemm)->us.mean == 10);  // not a block
  CHECK(with_block_probes(profile_of(55, 7, 10), BlockProbes{}).find(kLayer)->us.mean == 55);
}

TEST_CASE("the intervals carry the blocks' level: a median of three level samples 0.9 / 1.0 / 1.1 in closed form") {
  // Steps without noise, each plan measured at exactly its prediction: the steps alone give
  // zero-width intervals at 0 (met by luck if the block level is uncertain). Plan 0 moves fully
  // with the blocks (sensitivity 1), plan 1 half. A bootstrap median of 3 values is 1.0 with
  // probability 13/27 (two or three draws of it, or one of each) and 0.9 or 1.1 with 7/27 each, so
  // both tails hold more than 2.5 %: MAPE is 0 or 0.75 x 0.1, max error 0 or 0.1, and their 95 %
  // intervals are [0, 0.075] and [0, 0.1].
  const std::vector<double> pred = {1.0, 2.0};
  const Groups steps = {{1.0, 1.0, 1.0, 1.0}, {2.0, 2.0, 2.0, 2.0}};
  const MetricsWithIntervals alone = iteration_metrics_with_intervals(pred, {}, {}, steps, 2000, 3);
  CHECK(alone.interval[kMape].hi == 0);
  CHECK(judge_at_most(alone.interval[kMape], 0.05) == Verdict::kMet);
  const MetricsWithIntervals both = iteration_metrics_with_intervals(pred, {1.0, 0.5}, {90, 100, 110}, steps, 2000, 3);
  CHECK(both.point[kMape] == 0);
  CHECK(both.interval[kMape].lo == Approx(0).margin(1e-12));
  CHECK(both.interval[kMape].hi == Approx(0.075));
  CHECK(both.interval[kMaxError].lo == Approx(0).margin(1e-12));
  CHECK(both.interval[kMaxError].hi == Approx(0.1));
  CHECK(judge_at_most(both.interval[kMape], 0.05) == Verdict::kUndecided);  // no longer met by luck
  // No level samples: the steps alone.
  const MetricsWithIntervals none = iteration_metrics_with_intervals(pred, {1.0, 0.5}, {}, steps, 2000, 3);
  CHECK(none.interval[kMape].hi == alone.interval[kMape].hi);
  CHECK_THROWS_AS(iteration_metrics_with_intervals(pred, {1.0}, {90, 100}, steps, 2000, 3), Error);
}

TEST_CASE("block probes by sweep: the warm-up sweep of each interleave left out, one vector per timed sweep") {
  // 3 steps of 2 plans: runs go step by step (step 1: plans 0 1, step 2: ..., step 3: ...).
  nlohmann::json j = interleave_json({10, 11, 20, 21, 30, 31}, {1, 1, 2, 2, 3, 3});
  j["steps"] = 3;
  j["plans"] = nlohmann::json::array({nlohmann::json::object(), nlohmann::json::object()});
  BlockProbes b;
  add_block_probes(b, j, "r0.json");
  add_block_probes(b, j, "r1.json");
  CHECK(b.level_us.size() == 12);
  CHECK(b.sweep_level_us ==
        std::vector<std::vector<double>>{{22, 23}, {33, 34}, {22, 23}, {33, 34}});
  j["steps"] = 4;  // 6 runs cannot be 4 steps of 2 plans
  try {
    add_block_probes(b, j, "out/interleave-r2.json");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("out/interleave-r2.json:/block_probes/0/us: expected 8"));
  }
}

TEST_CASE("sweeps resampled whole: a drift shared by a sweep cancels, as it did in the steps") {
  // Every plan's step k and the blocks after it ran at the machine's speed d[k] of that sweep:
  // steps[i][k] = base[i] d[k], blocks' level 100 d[k]. Plans 0 and 2 are predicted at base x
  // median(d) and move fully with the blocks (sensitivity 1), so in every resample of whole sweeps
  // their prediction follows their measured median exactly; plan 1 is predicted 0.1 % faster than
  // plan 0 but measures 2 % slower. Closed form in every replicate: errors 0, |0.999 x 0.30 - 0.306|
  // / 0.306 and 0; best-plan gap 0.306 / 0.30 - 1 = 2 %; so zero-width intervals.
  const std::vector<double> d = {1.0, 1.2, 0.9, 1.1, 1.3}, base = {0.30, 0.306, 0.40};
  const double m = 1.1;  // median of d
  Groups steps(3);
  std::vector<std::vector<double>> sweeps;
  for (size_t k = 0; k < d.size(); ++k) {
    for (size_t i = 0; i < 3; ++i) steps[i].push_back(base[i] * d[k]);
    sweeps.push_back({100 * d[k], 100 * d[k], 100 * d[k]});
  }
  const std::vector<double> pred = {0.30 * m, 0.30 * 0.999 * m, 0.40 * m}, sens = {1, 1, 1};
  const double e1 = (0.306 - 0.30 * 0.999) / 0.306;
  const MetricsWithIntervals p = sweep_paired_metrics_with_intervals(pred, sens, sweeps, steps, 2000, 5);
  CHECK(p.point[kBestGap] == Approx(0.02));
  CHECK(p.interval[kBestGap].lo == Approx(0.02));
  CHECK(p.interval[kBestGap].hi == Approx(0.02));
  CHECK(p.interval[kMape].lo == Approx(e1 / 3));
  CHECK(p.interval[kMape].hi == Approx(e1 / 3));
  CHECK(p.interval[kMaxError].hi == Approx(e1));
  CHECK(p.interval[kSpearman].lo == Approx(0.5));  // ranks (2 1 3) against (1 2 3) in every replicate
  // Each plan's steps resampled alone mix one plan's slow sweeps with another's fast ones.
  std::vector<double> flat;
  for (const auto& s : sweeps) flat.insert(flat.end(), s.begin(), s.end());
  const MetricsWithIntervals q = iteration_metrics_with_intervals(pred, sens, flat, steps, 2000, 5);
  CHECK(q.interval[kBestGap].hi > 0.15);
  CHECK(q.interval[kMape].hi > 0.05);
  // Plans of unequal step counts cannot be paired; nor sweeps that do not match the steps.
  CHECK_THROWS_AS(sweep_paired_metrics_with_intervals(pred, sens, sweeps, {{1, 2}, {1, 2}, {1}}, 100, 5), Error);
  CHECK_THROWS_AS(sweep_paired_metrics_with_intervals(pred, sens, {{1}, {2}}, steps, 100, 5), Error);
  // No block probes: whole sweeps of the steps alone; plan 1's error and the gap as before.
  const MetricsWithIntervals s = sweep_paired_metrics_with_intervals(pred, sens, {}, steps, 2000, 5);
  CHECK(s.interval[kBestGap].hi == Approx(0.02));
}
