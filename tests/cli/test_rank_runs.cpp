// cli/rank_runs.h: a plan's 2-rank runs merged into one. Oracle: hand-written runs (warm-ups left
// out, medians).
#include <catch2/catch.hpp>

#include "cli/rank_runs.h"

using namespace protwin;
using protwin::cli::merge_runs;

namespace {
nlohmann::json run(std::vector<double> steps, int64_t peak, double wait, double gemm0) {
  nlohmann::json probes = nlohmann::json::array();
  for (int r = 0; r < 2; ++r) {
    nlohmann::json per_step = nlohmann::json::array();
    for (size_t i = 0; i < steps.size(); ++i) per_step.push_back({{"gemm_before_gflops", gemm0 + 10 * r + i}});
    probes.push_back(per_step);
  }
  return {{"iteration_s", steps}, {"peak_device_bytes", peak}, {"peak_device_reserved_bytes", peak + 1},
          {"peak_pinned_bytes", 5}, {"peak_pageable_bytes", peak / 2}, {"wait_cpu_share", wait},
          {"rank_probes", probes}, {"compute_threads", 1}};
}
}  // namespace

TEST_CASE("rank runs: the steps and probes of all runs without each warm-up, the median peaks and wait share") {
  const nlohmann::json m = merge_runs({run({9, 1, 2}, 100, 0.1, 50), run({8, 3}, 300, 0.3, 60), run({7, 4, 5}, 200, 0.2, 70)});
  CHECK(m["iteration_s"].get<std::vector<double>>() == std::vector<double>{1, 2, 3, 4, 5});
  CHECK(m["peak_device_bytes"] == 200);  // of 100, 300, 200
  CHECK(m["peak_device_reserved_bytes"] == 201);
  CHECK(m["peak_pageable_bytes"] == 100);
  CHECK(m["peak_pinned_bytes"] == 5);
  CHECK(m["wait_cpu_share"].get<double>() == Approx(0.2));
  REQUIRE(m["rank_probes"].size() == 2);
  std::vector<double> rank1;
  for (const auto& p : m["rank_probes"][1]) rank1.push_back(p["gemm_before_gflops"].get<double>());
  CHECK(rank1 == std::vector<double>{61, 62, 71, 81, 82});  // 50+10+{1,2}, 60+10+1, 70+10+{1,2}
  CHECK(m["compute_threads"] == 1);
}

TEST_CASE("rank runs: a run of one step keeps it (nothing else was measured)") {
  const nlohmann::json m = merge_runs({run({4}, 10, 0.5, 1)});
  CHECK(m["iteration_s"].get<std::vector<double>>() == std::vector<double>{4});
  CHECK(m["rank_probes"][0].size() == 1);
}
