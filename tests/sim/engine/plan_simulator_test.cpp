// PlanSimulator against literal timelines and closed forms (DESIGN §11).
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "plan_builder.h"
#include "sim/engine/plan_simulator.h"
#include "sim/engine/synthetic_plan.h"
#include "traces/error.h"
#include "traces/report.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::test;

namespace {
int64_t start_of(const traces::Report& r, int op) { return r.ops[static_cast<size_t>(op)].start.ns; }
int64_t end_of(const traces::Report& r, int op) { return r.ops[static_cast<size_t>(op)].end.ns; }

// Links: pcie_h2d 16, pcie_d2h 8, pcie 10 (shared by s_a, s_b, s_c), fast 10 + slow 4.
const char* kRates = R"({"format": "protwin.rates", "version": 1,
  "links": {"pcie_h2d": {"GBps": 16}, "pcie_d2h": {"GBps": 8}, "pcie": {"GBps": 12},
            "fast": {"GBps": 10}, "slow": {"GBps": 4}},
  "streams": {
    "compute": {"tflops": 1},
    "h2d": {"latency_us": 1, "links": ["pcie_h2d"]},
    "d2h": {"latency_us": 0.5, "links": ["pcie_d2h"]},
    "s_a": {"links": ["pcie"], "max_GBps": 2},
    "s_b": {"links": ["pcie"]},
    "s_c": {"links": ["pcie"]},
    "two": {"links": ["fast", "slow"]},
    "copy": {"latency_us": 2, "GBps": 3}
  }})";
}  // namespace

TEST_CASE("literal timeline of a 3-op plan", "[engine][sim]") {
  // Oracle, by hand:
  //   op 0 h2d:     1600 B on 16 GB/s after 1 us latency: [0, 1000 + 100) = [0, 1100)
  //   op 1 forward: 2e6 flops at 1 TFLOPS after op 0:     [1100, 3100)
  //   op 2 d2h:     800 B on 8 GB/s after 0.5 us, after 1: [3100, 3100 + 500 + 100) = [3100, 3700)
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute", "h2d", "d2h"});
  p.pools = {{"gpu", Bytes(4096), Bytes(1000)}, {"pinned", Bytes(4096), Bytes(0)}};
  p.meta = {{"model", "toy"}};
  add_op(p, "h2d", "h2d", {}, 0, 1600);
  add_op(p, "forward", "compute", {0}, 2e6, 0);
  add_op(p, "d2h", "d2h", {1}, 0, 800);
  p.ops[0].mem = {{"gpu", 1600, traces::MemAt::kStart, -1}};
  p.ops[1].mem = {{"gpu", 400, traces::MemAt::kStart, -1}, {"gpu", -400, traces::MemAt::kEnd, -1}};
  p.ops[2].mem = {{"pinned", 800, traces::MemAt::kStart, -1}, {"gpu", -1600, traces::MemAt::kEnd, -1}};

  const traces::Report r = PlanSimulator(m).run(p);
  REQUIRE(r.ops.size() == 3);
  CHECK(start_of(r, 0) == 0);
  CHECK(end_of(r, 0) == 1100);
  CHECK(start_of(r, 1) == 1100);
  CHECK(end_of(r, 1) == 3100);
  CHECK(start_of(r, 2) == 3100);
  CHECK(end_of(r, 2) == 3700);
  CHECK(r.iteration == SimTime(3700));
  CHECK(r.stream("compute")->busy == SimTime(2000));
  CHECK(r.stream("h2d")->busy == SimTime(1100));
  CHECK(r.stream("d2h")->busy == SimTime(600));
  CHECK(r.stream("d2h")->ops == 1);

  const traces::PoolRecord* gpu = r.pool("gpu");
  REQUIRE(gpu != nullptr);
  CHECK(gpu->capacity == Bytes(4096));
  CHECK(gpu->peak == Bytes(3000));  // 1000 + 1600 + 400
  CHECK(gpu->peak_at == SimTime(1100));
  const std::vector<std::pair<SimTime, Bytes>> gpu_curve = {
      {SimTime(0), Bytes(1000)}, {SimTime(0), Bytes(2600)}, {SimTime(1100), Bytes(3000)},
      {SimTime(3100), Bytes(2600)}, {SimTime(3700), Bytes(1000)}};
  CHECK(gpu->curve == gpu_curve);
  const std::vector<std::pair<SimTime, Bytes>> pinned_curve = {{SimTime(0), Bytes(0)},
                                                               {SimTime(3100), Bytes(800)}};
  CHECK(r.pool("pinned")->curve == pinned_curve);
  CHECK(r.meta["source"] == "sim");
  CHECK(r.meta["plan"]["model"] == "toy");
}

TEST_CASE("closed form: one copy = latency + bytes / bandwidth, rounded up", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"copy"});
  add_op(p, "d2h", "copy", {}, 0, 1000);
  CHECK(PlanSimulator(m).run(p).iteration == SimTime(2000 + 334));  // 2 us + ceil(1000 / 3)
}

TEST_CASE("closed form: two independent streams take the max of the two", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute", "copy"});
  add_op(p, "forward", "compute", {}, 5e6);   // 5000 ns
  add_op(p, "d2h", "copy", {}, 0, 3000);      // 2000 + 1000 ns
  const auto r = PlanSimulator(m).run(p);
  CHECK(start_of(r, 0) == 0);
  CHECK(start_of(r, 1) == 0);
  CHECK(r.iteration == SimTime(std::max(5000, 3000)));
}

TEST_CASE("closed form: ops on one stream run in order even without deps", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute", {}, 1e6);
  add_op(p, "forward", "compute", {}, 2e6);
  add_op(p, "forward", "compute", {}, 3e6);
  const auto r = PlanSimulator(m).run(p);
  CHECK(end_of(r, 0) == 1000);
  CHECK(start_of(r, 1) == 1000);
  CHECK(start_of(r, 2) == 3000);
  CHECK(r.iteration == SimTime(6000));
}

TEST_CASE("closed form: two concurrent transfers on one link each get half", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"s_b", "s_c"});
  add_op(p, "h2d", "s_b", {}, 0, 1200);
  add_op(p, "h2d", "s_c", {}, 0, 1200);
  const auto r = PlanSimulator(m).run(p);
  CHECK(end_of(r, 0) == 2 * 1200 / 12);
  CHECK(end_of(r, 1) == 2 * 1200 / 12);
}

TEST_CASE("closed form: a transfer over two links gets the slower link's rate", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"two"});
  add_op(p, "h2d", "two", {}, 0, 1000);
  CHECK(PlanSimulator(m).run(p).iteration == SimTime(1000 / 4));
}

TEST_CASE("closed form: water-filling with a per-transfer cap", "[engine][sim]") {
  // pcie = 12: s_a capped at 2, s_b and s_c share 10 (5 each). s_a's 200 B end at 100; the
  // others have 1000 - 500 = 500 B left at 6 each: 100 + ceil(500 / 6) = 184.
  const auto m = rates(kRates);
  auto p = plan_with_streams({"s_a", "s_b", "s_c"});
  add_op(p, "h2d", "s_a", {}, 0, 200);
  add_op(p, "h2d", "s_b", {}, 0, 1000);
  add_op(p, "h2d", "s_c", {}, 0, 1000);
  const auto r = PlanSimulator(m).run(p);
  CHECK(end_of(r, 0) == 100);
  CHECK(end_of(r, 1) == 184);
  CHECK(end_of(r, 2) == 184);
}

TEST_CASE("closed form: k-stage prefetch pipeline with n buffers", "[engine][sim]") {
  // Upload i on h2d (u ns), compute i on compute (c ns) after upload i; with n buffers, upload i
  // also waits for compute i - n. Closed form of the end of the last compute:
  //   n = 1:  k (u + c)                      (nothing overlaps)
  //   n >= 2: u + c + (k - 1) max(u, c)      (the slower stage runs back to back)
  // (n >= 2 suffices: the slower stage never waits because u <= (n-1) c or c <= (n-1) u.)
  struct Case { int k, n; int64_t u, c; };
  const std::vector<Case> cases = {{1, 1, 700, 300},  {4, 1, 700, 300},   {4, 2, 700, 300},
                                   {4, 2, 300, 700},  {8, 3, 1000, 1000}, {16, 2, 1234, 5678},
                                   {16, 4, 5678, 1234}, {32, 2, 1, 1},     {5, 5, 100, 200}};
  // h2d: 16 GB/s link, no latency here; compute at 1 TFLOPS = 1000 flops/ns.
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
      "links": {"pcie_h2d": {"GBps": 16}},
      "streams": {"compute": {"tflops": 1}, "h2d": {"links": ["pcie_h2d"]}}})");
  for (const Case& cs : cases) {
    auto p = plan_with_streams({"compute", "h2d"});
    for (int i = 0; i < cs.k; ++i) {
      std::vector<int> up_deps;
      if (i >= cs.n) up_deps.push_back(2 * (i - cs.n) + 1);  // compute i - n
      const int up = add_op(p, "h2d", "h2d", up_deps, 0, cs.u * 16);
      add_op(p, "forward", "compute", {up}, static_cast<double>(cs.c) * 1000);
    }
    const int64_t expected =
        cs.n == 1 ? cs.k * (cs.u + cs.c) : cs.u + cs.c + (cs.k - 1) * std::max(cs.u, cs.c);
    INFO("k=" << cs.k << " n=" << cs.n << " u=" << cs.u << " c=" << cs.c);
    CHECK(PlanSimulator(m).run(p).iteration == SimTime(expected));
  }
}

TEST_CASE("ready ops start in (priority, op id) order at equal time", "[engine][sim]") {
  // Two ops become ready at t=0 on different streams; both take a 1-byte buffer from a pool
  // that holds one byte at a time; each frees it at its end. The first to start wins the pool;
  // the other would overflow, which names the second in order.
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute", "copy"});
  p.pools = {{"gpu", Bytes(1), Bytes(0)}};
  add_op(p, "forward", "compute", {}, 1e6);
  add_op(p, "d2h", "copy", {}, 0, 3);
  for (auto& op : p.ops) op.mem = {{"gpu", 1, traces::MemAt::kStart, -1}};
  CHECK_THROWS_WITH(PlanSimulator(m).run(p), Catch::StartsWith("plan op 1 (d2h, stream copy): pool gpu over capacity at 0 ns"));
  p.ops[1].priority = -1;  // now op 1 starts first
  CHECK_THROWS_WITH(PlanSimulator(m).run(p), Catch::StartsWith("plan op 0 (forward, stream compute): pool gpu over capacity at 0 ns"));
}

TEST_CASE("memory freed at t is available to an op starting at t", "[engine][sim]") {
  // Op 0 (compute) and op 1 (copy) both end at 2000; op 0's end is processed first and makes
  // op 2 ready. Op 2 needs the bytes op 1 frees at 2000: ends run before starts at equal time.
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute", "copy", "d2h"});
  p.pools = {{"gpu", Bytes(10), Bytes(0)}};
  add_op(p, "forward", "compute", {}, 2e6);  // [0, 2000)
  add_op(p, "d2h", "copy", {}, 0, 0);        // [0, 2000): holds 10 bytes
  add_op(p, "d2h", "d2h", {0}, 0, 0);        // [2000, 2500): takes 10 bytes
  p.ops[1].mem = {{"gpu", 10, traces::MemAt::kStart, -1}, {"gpu", -10, traces::MemAt::kEnd, -1}};
  p.ops[2].mem = {{"gpu", 10, traces::MemAt::kStart, -1}};
  const auto r = PlanSimulator(m).run(p);
  CHECK(start_of(r, 2) == 2000);
  CHECK(end_of(r, 2) == 2500);
  CHECK(r.pool("gpu")->peak == Bytes(10));
}

TEST_CASE("a plan over capacity names the op and the pool", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute", "h2d"});
  p.pools = {{"gpu", Bytes(25769803776), Bytes(0)}};
  add_op(p, "h2d", "h2d", {}, 0, 1600);
  add_op(p, "h2d", "h2d", {}, 0, 1600);
  p.ops[0].mem = {{"gpu", 25769803776 - 1024, traces::MemAt::kStart, -1}};
  p.ops[1].mem = {{"gpu", 2048, traces::MemAt::kEnd, -1}};
  CHECK_THROWS_WITH(PlanSimulator(m).run(p),
                    "plan op 1 (h2d, stream h2d): pool gpu over capacity at 2200 ns: 25769804800 "
                    "bytes needed (+2048), capacity 25769803776\n"
                    "hint: lower the plan's memory or raise the pool's capacity_bytes");
}

TEST_CASE("a plan going below zero names the op and the pool", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute"});
  p.pools = {{"pinned", Bytes(100), Bytes(10)}};
  add_op(p, "forward", "compute", {}, 1e6);
  p.ops[0].mem = {{"pinned", -11, traces::MemAt::kEnd, -1}};
  CHECK_THROWS_WITH(PlanSimulator(m).run(p),
                    Catch::StartsWith("plan op 0 (forward, stream compute): pool pinned below zero "
                                      "at 1000 ns: -1 bytes after -11"));
}

TEST_CASE("plans the simulator cannot run are refused with the op named", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute", {1});
  add_op(p, "forward", "compute", {});
  CHECK_THROWS_WITH(PlanSimulator(m).run(p),
                    "plan op 0 (forward, stream compute): never ran: its dependencies (deps and the "
                    "in-order stream) form a cycle");
  p.ops[0].deps = {7};
  CHECK_THROWS_WITH(PlanSimulator(m).run(p),
                    "plan op 0 (forward, stream compute): dependency on unknown op 7");
  p.ops[0].deps = {0};
  CHECK_THROWS_WITH(PlanSimulator(m).run(p), "plan op 0 (forward, stream compute): depends on itself");
  p.ops[0].deps = {};
  p.ops[1].stream = "nope";
  CHECK_THROWS_WITH(PlanSimulator(m).run(p), "plan op 1 (forward, stream nope): unknown stream \"nope\"");
  p.ops[1].stream = "compute";
  p.ops[1].mem = {{"hbm", 1, traces::MemAt::kStart, -1}};
  CHECK_THROWS_WITH(PlanSimulator(m).run(p),
                    "plan op 1 (forward, stream compute): memory effect on unknown pool \"hbm\"");
}

TEST_CASE("the simulator and validate refuse an op through one check, with the same message", "[engine][sim]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute", {});
  auto same = [&](const std::string& want) {
    CHECK_THROWS_WITH(PlanSimulator(m).run(p), want);
    CHECK_THROWS_WITH(traces::validate(p), want);
  };
  p.ops[0].work.flops = -1;
  same("plan op 0 (forward, stream compute): negative work (flops -1, bytes 0, params 0)");
  p.ops[0].work.flops = 0;
  p.ops[0].reads = {3};
  same("plan op 0 (forward, stream compute): reads unknown tensor 3");
  p.ops[0].reads = {};
  p.ops[0].kernels = 2;
  same("plan op 0 (forward, stream compute): kernel set 2 does not exist (the plan has 0)");
}

TEST_CASE("determinism: two runs give byte-identical reports, also from parallel threads",
          "[engine][sim]") {
  const auto m = hw::RateCostModel::from_json(synthetic_rates(), "synthetic");
  const traces::Plan p = make_synthetic_plan(3000, 5, 42);
  const PlanSimulator sim(m);
  const std::string first = traces::report_to_string(sim.run(p));
  CHECK(traces::report_to_string(sim.run(p)) == first);
  std::vector<std::string> out(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < out.size(); ++t) {
    threads.emplace_back([&, t] { out[t] = traces::report_to_string(PlanSimulator(m).run(p)); });
  }
  for (auto& th : threads) th.join();
  for (const auto& s : out) CHECK(s == first);
}

TEST_CASE("synthetic plans are deterministic from the seed and always fit", "[engine][sim]") {
  const auto a = make_synthetic_plan(500, 7, 1), b = make_synthetic_plan(500, 7, 1);
  CHECK(traces::plan_to_json(a) == traces::plan_to_json(b));
  CHECK(traces::plan_to_json(a) != traces::plan_to_json(make_synthetic_plan(500, 7, 2)));
  CHECK_NOTHROW(traces::validate(a));
  // Every op beyond the first sees the stream order: the report covers all of them.
  const auto m = hw::RateCostModel::from_json(synthetic_rates(), "synthetic");
  const auto r = PlanSimulator(m).run(a);
  int64_t ops = 0;
  for (const auto& s : r.streams) ops += s.ops;
  CHECK(ops == 500);
}

namespace {
// Every op takes `fixed` ns and then moves `bytes` over link 0 (of `gbps` GB/s) when bytes > 0.
class FixedCost final : public hw::CostModel {
 public:
  FixedCost(SimTime fixed, double bytes, double gbps) : fixed_(fixed), bytes_(bytes), gbps_(gbps) {}
  std::vector<hw::LinkSpec> links() const override { return {{"link", gbps_}}; }
  hw::OpCost cost(const traces::Op&, const traces::Plan&) const override {
    hw::OpCost c;
    c.add(hw::on_device(fixed_));
    if (bytes_ > 0) c.add(hw::over_links({0, -1, -1}, bytes_, 0));
    return c;
  }

 private:
  SimTime fixed_;
  double bytes_, gbps_;
};
}  // namespace

TEST_CASE("times past the simulator's horizon are user errors naming the op, not overflows", "[engine][sim]") {
  auto p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute");
  add_op(p, "forward", "compute", {0});
  // A saturated duration (a cost model's from_seconds of an absurd time) after another op.
  CHECK(from_seconds(1e300) == SimTime::max());
  CHECK(ceil_ns(1e39) == SimTime::max());
  CHECK(from_seconds(1e-12) == SimTime(1));
  try {
    PlanSimulator(FixedCost(SimTime(kSimHorizonNs - 10), 0, 1)).run(p);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(std::string(e.what()).rfind("plan op 1 (forward, stream compute): takes 4.61169e+09 s from 4.61169e+09 s "
                                      "on, past the simulator's horizon of 2^62 ns (146 years)", 0) == 0);
  }
  // A transfer that would end past it.
  CHECK_THROWS_WITH(PlanSimulator(FixedCost(SimTime(0), 1e30, 1e-6)).run(p),
                    Catch::Matchers::StartsWith("a transfer of 1e+30 bytes at 1e-06 GB/s would end past the "
                                                "simulator's horizon of 2^62 ns (146 years)"));
}
