// The joint simulation of a plan's ranks (sim/engine/joint_ranks.h) against the single-rank
// simulation (identical ranks, unshared cores) and closed forms (a collective as a rendezvous of
// ranks at different speeds; processor sharing of the host's cores).
#include <catch2/catch.hpp>

#include "plan_builder.h"
#include "sim/engine/joint_ranks.h"
#include "sim/engine/plan_simulator.h"
#include "traces/report.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::test;

namespace {
// compute and cpu_optim at `tflops` (1e7 flops = 10 us at 1 TFLOPS); a collective: 2 us latency +
// bytes at 1 GB/s; h2d over a link of 2 GB/s.
hw::RateCostModel rank_rates(double tflops) {
  return rates(R"({"links": {"pcie_h2d": {"GBps": 2}}, "streams": {
    "compute": {"tflops": )" + std::to_string(tflops) + R"(}, "cpu_optim": {"tflops": )" + std::to_string(tflops) +
               R"(}, "collective": {"latency_us": 2, "GBps": 1}, "h2d": {"latency_us": 1, "links": ["pcie_h2d"]}}})");
}

// forward (10 us) + a parameter upload, all_gather (4000 B), backward (20 us), reduce_scatter
// (2000 B), CPU Adam (5 us) after it.
traces::Plan sharded_step() {
  auto p = plan_with_streams({"compute", "h2d", "collective", "cpu_optim"});
  const int up = add_op(p, "h2d", "h2d", {}, 0, 4000);
  const int fwd = add_op(p, "forward", "compute", {up}, 1e7);
  const int ag = add_op(p, "all_gather", "collective", {fwd}, 0, 4000);
  const int bwd = add_op(p, "backward", "compute", {ag}, 2e7);
  const int rs = add_op(p, "reduce_scatter", "collective", {bwd}, 0, 2000);
  add_op(p, "adam_cpu", "cpu_optim", {rs}, 5e6);
  return p;
}

double us(SimTime t) { return static_cast<double>(t.ns) * 1e-3; }
}  // namespace

TEST_CASE("joint ranks: identical ranks on unshared cores run as the single-rank simulation", "[engine][joint]") {
  const auto m = rank_rates(1);
  const traces::Plan p = sharded_step();
  const traces::Report one = PlanSimulator(m).run(p);
  const JointRanks j = simulate_joint_ranks(p, {&m, &m}, SharedCores{});
  CHECK(j.iteration_s == Approx(one.iteration.seconds()).epsilon(1e-12));
  REQUIRE(j.rank_s.size() == 2);
  for (double r : j.rank_s) CHECK(r == Approx(one.iteration.seconds()).epsilon(1e-12));
  for (double w : j.wait_s) CHECK(w == 0);
  // Every op of every rank at the single simulation's times.
  for (int r = 0; r < 2; ++r) {
    const std::string prefix = "rank" + std::to_string(r) + ".";
    for (const auto& o : one.ops) {
      bool found = false;
      for (const auto& x : j.report.ops)
        if (x.stream == prefix + o.stream && x.kind == o.kind) {
          found = true;
          CHECK(x.start.ns == o.start.ns);
          CHECK(x.end.ns == o.end.ns);
        }
      CHECK(found);
    }
  }
}

TEST_CASE("joint ranks: a collective starts when the slower rank arrives, the faster one waits", "[engine][joint]") {
  // Rank 1 computes at half speed. Upload: 1 us + 4000 B / 2 GB/s = 3 us on each rank's own link.
  // forward: 10 / 20 us -> ends at 13 / 23; all_gather (2 us + 4 us) on both from 23 to 29;
  // backward 20 / 40 us -> 49 / 69; reduce_scatter (2 + 2 us) on both 69..73; Adam 5 / 10 us.
  const auto fast = rank_rates(1), slow = rank_rates(0.5);
  const JointRanks j = simulate_joint_ranks(sharded_step(), {&fast, &slow}, SharedCores{});
  CHECK(j.rank_s[0] * 1e6 == Approx(78));
  CHECK(j.rank_s[1] * 1e6 == Approx(83));
  CHECK(j.iteration_s * 1e6 == Approx(83));
  CHECK(j.wait_s[0] * 1e6 == Approx(10 + 20));  // 13..23 and 49..69
  CHECK(j.wait_s[1] == 0);
  CHECK(j.compute_s[0] * 1e6 == Approx(30));
  CHECK(j.compute_s[1] * 1e6 == Approx(60));
}

TEST_CASE("joint ranks: the host's cores are shared by both ranks' CPU threads and a waiting rank",
          "[engine][joint]") {
  // Rank 0: compute and CPU Adam of 10 us each from t = 0; rank 1 the same work at 10x speed
  // (1 us each); then an all_reduce of nothing (2 us) after both. On C = 2 cores: [0, 2) four
  // threads run (rate 1/2): rank 1's ops end at 2 us; then rank 0's two and rank 1 waiting (rate
  // 2/3): 1 + 2/3 (L - 2) = 10 => L = 15.5 us; the all_reduce 15.5..17.5; rank 1 waits 13.5 us.
  auto p = plan_with_streams({"compute", "cpu_optim", "collective"});
  const int a = add_op(p, "forward", "compute", {}, 1e7);
  const int b = add_op(p, "adam_cpu", "cpu_optim", {}, 1e7);
  add_op(p, "all_reduce", "collective", {a, b});
  const auto r0 = rank_rates(1), r1 = rank_rates(10);
  SharedCores cores{2, {{"compute", 1}, {"cpu_optim", 1}}, {}, 1};  // a waiting rank: 1 thread
  const JointRanks j = simulate_joint_ranks(p, {&r0, &r1}, cores);
  for (const auto& o : j.report.ops) {
    if (o.stream == "rank0.compute" || o.stream == "rank0.cpu_optim") CHECK(us(o.end - o.start) == Approx(15.5).epsilon(1e-6));
    if (o.stream == "rank1.compute" || o.stream == "rank1.cpu_optim") CHECK(us(o.end - o.start) == Approx(2).epsilon(1e-6));
  }
  CHECK(j.iteration_s * 1e6 == Approx(17.5).epsilon(1e-6));
  CHECK(j.wait_s[1] * 1e6 == Approx(13.5).epsilon(1e-6));
  CHECK(j.wait_s[0] == Approx(0).margin(1e-9));

  SECTION("with as many cores as threads nothing slows down") {
    cores.cores = 4;
    const JointRanks u = simulate_joint_ranks(p, {&r0, &r1}, cores);
    CHECK(u.iteration_s * 1e6 == Approx(12));
  }
  SECTION("a waiting rank that does not poll frees its core") {
    cores.wait_threads = 0;  // rank 0's two threads alone on two cores after t = 2 us
    const JointRanks u = simulate_joint_ranks(p, {&r0, &r1}, cores);
    CHECK(u.rank_s[0] * 1e6 == Approx(2 + 9 + 2).epsilon(1e-6));  // 1 us of work by t = 2, 9 more
  }
}

TEST_CASE("joint ranks: a busy collective stream loads the cores without being slowed itself", "[engine][joint]") {
  // Both ranks: 10 us of compute and, from t = 0, an all_gather of 100000 B (2 + 100 us). On C = 2
  // cores with x load threads per busy collective: 2 + 2x runnable, compute at 2 / (2 + 2x) of its
  // speed: 10 (1 + x) us; the collective keeps its 102 us.
  auto p = plan_with_streams({"compute", "collective"});
  add_op(p, "forward", "compute", {}, 1e7);
  add_op(p, "all_gather", "collective", {}, 0, 100000);
  const auto m = rank_rates(1);
  for (double x : {1.0, 0.5, 0.0}) {
    const SharedCores cores{2, {{"compute", 1}}, {{"collective", x}}, 1};
    const JointRanks j = simulate_joint_ranks(p, {&m, &m}, cores);
    for (const auto& o : j.report.ops) {
      if (o.kind == "forward") CHECK(us(o.end - o.start) == Approx(10 * (1 + x)).epsilon(1e-6));
      if (o.kind == "all_gather") CHECK(us(o.end - o.start) == Approx(102).epsilon(1e-9));
    }
  }
}
