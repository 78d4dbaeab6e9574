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
const traces::OpSignature kGemm{"gemm", {1024, 768, 256}, "fp32"};

nlohmann::json interleave_json(const std::vector<double>& layer, const std::vector<double>& head) {
  return {{"block_probes",
           {{{"signature", kLayer.key()}, {"us", layer}}, {{"signature", kHead.key()}, {"us", head}}}}};
}

traces::OpProfile profile_of(double layer_us, double head_us, double gemm_us) {
  traces::OpProfile p("emulated", "measured", "test");
  for (const auto& [sig, us] : {std::make_pair(kLayer, layer_us), std::make_pair(kHead, head_us),
                                std::make_pair(kGemm, gemm_us)}) {
    traces::OpProfileEntry e;
    e.sig = sig;
    e.us.add(us);
    p.add(e);
  }
  return p;
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
  const MetricsWithIntervals alone = iteration_metrics_with_intervals(pred, steps, 2000, 3);
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
