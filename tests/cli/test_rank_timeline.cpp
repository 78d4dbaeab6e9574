// cli/rank_runs.h: two ranks' reports of one step laid on the shared clock. Oracle: hand-
// computed waits and transfers of a two-op timeline.
#include <catch2/catch.hpp>

#include "cli/rank_runs.h"
#include "traces/error.h"

using namespace protwin;

namespace {
traces::Report rank_report(int64_t steady_start, int64_t compute_end, int64_t coll_start, int64_t coll_end) {
  traces::Report r;
  r.meta = {{"source", "runtime"}, {"steady_start_ns", steady_start}};
  r.ops = {{0, "backward", "compute", SimTime{0}, SimTime{compute_end}},
           {1, "reduce_scatter", "collective", SimTime{coll_start}, SimTime{coll_end}}};
  r.iteration = SimTime{coll_end};
  traces::StreamRecord c;
  c.name = "compute";
  c.busy = SimTime{compute_end};
  traces::StreamRecord k;
  k.name = "collective";
  k.busy = SimTime{coll_end - coll_start};
  r.streams = {c, k};
  return r;
}
}  // namespace

TEST_CASE("rank timeline: a collective's wait is the time until the last rank arrives, the rest its transfer") {
  // Rank 0 starts at clock 1000 and reaches the reduce-scatter at 300 (clock 1300); rank 1 starts at
  // clock 1100 and reaches it at 700 (clock 1800). Both finish it at clock 2000.
  const std::vector<traces::Report> reps = {rank_report(1000, 300, 300, 1000), rank_report(1100, 700, 700, 900)};
  const nlohmann::json b = cli::rank_breakdown(reps);
  REQUIRE(b.size() == 2);
  CHECK(b[0]["collective_wait_s"].get<double>() == Approx(500e-9));      // 1300 -> 1800
  CHECK(b[0]["collective_transfer_s"].get<double>() == Approx(200e-9));  // 1800 -> 2000
  CHECK(b[1]["collective_wait_s"].get<double>() == 0.0);
  CHECK(b[1]["collective_transfer_s"].get<double>() == Approx(200e-9));
  CHECK(b[1]["start_offset_s"].get<double>() == Approx(100e-9));
  CHECK(b[0]["busy_s"]["compute"].get<double>() == Approx(300e-9));
  CHECK(b[1]["busy_s"]["compute"].get<double>() == Approx(700e-9));
}

TEST_CASE("rank timeline: reports of different plans or without the clock are refused") {
  std::vector<traces::Report> reps = {rank_report(0, 1, 1, 2), rank_report(0, 1, 1, 2)};
  reps[1].ops.pop_back();
  REQUIRE_THROWS_WITH(cli::rank_breakdown(reps), "rank 1's report has 1 ops, rank 0's 2: not the same plan");
  reps = {rank_report(0, 1, 1, 2), rank_report(0, 1, 1, 2)};
  reps[0].meta.erase("steady_start_ns");
  REQUIRE_THROWS_WITH(cli::rank_breakdown(reps), Catch::StartsWith("rank 0's report has no meta.steady_start_ns"));
}
