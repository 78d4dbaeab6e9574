// Each rank's speeds per step of a 2-rank interleaved launch (sim/calib/rank_step_speeds.h), against
// hand-made probes. Oracle: with no window a step's speed is the median of its own two probes
// (their mean), and a scale is the reference speed over it; each rank is judged by its own probes.
#include <catch2/catch.hpp>

#include "sim/calib/rank_step_speeds.h"
#include "traces/error.h"

using namespace protwin::calib;

namespace {

// Two plans, two steps; rank 0 at half the reference GEMM speed on plan 1 step 1 only.
nlohmann::json interleave_json() {
  auto rank_series = [](double r0, double r1) {
    return nlohmann::json::array({nlohmann::json::array({r0, r0}), nlohmann::json::array({r1, r1})});
  };
  nlohmann::json plans = nlohmann::json::array();
  for (int i = 0; i < 2; ++i) {
    nlohmann::json r = {{"gemm_before_gflops", rank_series(100, 100)}, {"gemm_after_gflops", rank_series(100, 100)},
                        {"copy_before_GBps", rank_series(0.25, 0.125)}, {"copy_after_GBps", rank_series(0.25, 0.125)},
                        {"adam_before_mparams_per_s", rank_series(40, 40)},
                        {"adam_after_mparams_per_s", rank_series(40, 20)}};
    if (i == 1) {
      r["gemm_before_gflops"][0][1] = 40.0;  // rank 0, plan 1, step 1: probes 40 and 60 around it
      r["gemm_after_gflops"][0][1] = 60.0;
    }
    plans.push_back({{"ranks", r}, {"iteration_s", {1.0, 1.0}}});
  }
  return {{"plans", plans}, {"ranks", 2}};
}

}  // namespace

TEST_CASE("rank_step_scales: each rank's step scales are the reference over its own probes", "[calibrate][ranks]") {
  const std::vector<RankProbes> probes = rank_probes_of(interleave_json());
  REQUIRE(probes.size() == 2);
  REQUIRE(probes[0].gemm_before.size() == 2);  // plans
  const auto s = rank_step_scales(probes, {100, 0.25, 40}, 0);
  REQUIRE(s.size() == 2);
  REQUIRE(s[0].size() == 2);
  REQUIRE(s[0][0].size() == 2);
  // rank 0 at the reference everywhere but plan 1 step 1 (median of 40 and 60 = 50: twice as slow)
  CHECK(s[0][0][0].compute == Approx(1));
  CHECK(s[1][1][0].compute == Approx(2));
  CHECK(s[1][0][0].compute == Approx(1));
  // rank 1: copies at half the reference, CPU Adam at 40 before and 20 after (median 30)
  CHECK(s[0][0][1].copy == Approx(2));
  CHECK(s[0][1][1].cpu == Approx(40.0 / 30));
  CHECK(s[1][1][1].compute == Approx(1));  // rank 0's slow step does not touch rank 1
}

TEST_CASE("rank_step_scales: a window takes the median over neighbouring steps in time", "[calibrate][ranks]") {
  // Time order p0s0 p1s0 p1s1 p0s1: the slow step (p1s1) also sees its neighbours p1s0 and p0s1,
  // probes 100 100 40 60 100 100: median 100.
  const auto s = rank_step_scales(rank_probes_of(interleave_json()), {100, 0.25, 40}, 1);
  CHECK(s[1][1][0].compute == Approx(1));
}

TEST_CASE("rank_step_scales: a window over the whole launch gives each rank the median of all its probes",
          "[calibrate][ranks]") {
  const auto s = rank_step_scales(rank_probes_of(interleave_json()), {100, 0.25, 40}, 4);  // 2 plans x 2 steps
  for (size_t i = 0; i < 2; ++i)
    for (size_t t = 0; t < 2; ++t) {
      CHECK(s[i][t][0].compute == Approx(1));       // rank 0: 100 x 6, 40, 60
      CHECK(s[i][t][1].cpu == Approx(40.0 / 30));  // rank 1: 40 x 4, 20 x 4
      CHECK(s[i][t][1].copy == Approx(2));
    }
}

TEST_CASE("rank_probes_of: a one-rank interleave output is refused", "[calibrate][ranks]") {
  nlohmann::json j = interleave_json();
  for (auto& p : j["plans"]) p.erase("ranks");
  CHECK_THROWS_WITH(rank_probes_of(j), Catch::Contains("plans/0/ranks"));
  nlohmann::json k = interleave_json();
  k["plans"][1]["ranks"]["copy_after_GBps"].erase(1);
  CHECK_THROWS_WITH(rank_probes_of(k), Catch::Contains("copy_after_GBps: expected 2 ranks, got 1"));
}
