// Oracles: closed-form op times (latency + flops/tflops + bytes/GBps) and exact error messages.
#include <catch2/catch.hpp>

#include <limits>

#include "plan_builder.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::sim::test;

TEST_CASE("RateCostModel: fixed time of a stream without links", "[engine][rates]") {
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
      "streams": {"compute": {"tflops": 2, "GBps": 100, "latency_us": 5}}})");
  auto p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute", {}, 4e6, 1000);
  const hw::OpCost c = m.cost(p.ops[0], p);
  CHECK(c.stream_time() == SimTime(5000 + 2000 + 10));  // 5 us + 4e6/2e3 ns + 1000/100 ns
  CHECK(c.transfer() == nullptr);
}

TEST_CASE("RateCostModel: a link stream has a latency and a transfer", "[engine][rates]") {
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
      "links": {"pcie_h2d": {"GBps": 12}, "dram": {"GBps": 40}},
      "streams": {"h2d": {"latency_us": 3, "links": ["pcie_h2d", "dram"], "max_GBps": 10}}})");
  auto p = plan_with_streams({"h2d"});
  add_op(p, "h2d", "h2d", {}, 0, 4096);
  const hw::OpCost c = m.cost(p.ops[0], p);
  CHECK(c.stream_time() == SimTime(3000));
  // Links are listed in name order (JSON objects are read sorted): dram = 0, pcie_h2d = 1.
  REQUIRE(m.links().size() == 2);
  CHECK(m.links()[0].name == "dram");
  REQUIRE(c.transfer() != nullptr);
  CHECK(c.transfer()->n_links() == 2);
  CHECK(c.transfer()->links[0] == 1);
  CHECK(c.transfer()->links[1] == 0);
  CHECK(c.transfer()->bytes == 4096);
  CHECK(c.transfer()->max_GBps == 10);
}

TEST_CASE("RateCostModel: times round up, never to zero", "[engine][rates]") {
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
      "default": {"GBps": 3}})");
  auto p = plan_with_streams({"x"});
  add_op(p, "h2d", "x", {}, 0, 1000);
  add_op(p, "h2d", "x", {}, 0, 1);
  add_op(p, "h2d", "x", {}, 0, 0);
  CHECK(m.cost(p.ops[0], p).stream_time() == SimTime(334));
  CHECK(m.cost(p.ops[1], p).stream_time() == SimTime(1));
  CHECK(m.cost(p.ops[2], p).stream_time() == SimTime(0));
}

TEST_CASE("RateCostModel: bad inputs name the file and the JSON pointer", "[engine][rates]") {
  CHECK_THROWS_WITH(rates(R"({"format": "protwin.plan", "version": 1})"),
                    "rates.json:/format: expected \"protwin.rates\", got \"protwin.plan\"");
  CHECK_THROWS_WITH(rates(R"({"format": "protwin.rates", "version": 2})"),
                    "rates.json:/version: unsupported rates version 2 (this protwin reads version 1)");
  CHECK_THROWS_WITH(rates(R"({"format": "protwin.rates"})"), "rates.json:/: missing required field \"version\"");
  CHECK_THROWS_WITH(
      rates(R"({"format": "protwin.rates", "version": 1, "streams": {"h2d": {"GBPs": 3}}})"),
      "rates.json:/streams/h2d: unknown field \"GBPs\" (known: GBps, latency_us, links, max_GBps, "
      "note, tflops)");
  CHECK_THROWS_WITH(
      rates(R"({"format": "protwin.rates", "version": 1, "links": {"pcie": {"GBps": 16}},
               "streams": {"h2d": {"links": ["pcie", "nvlink"]}}})"),
      "rates.json:/streams/h2d/links/1: unknown link \"nvlink\" (links: pcie)");
  CHECK_THROWS_WITH(
      rates(R"({"format": "protwin.rates", "version": 1, "links": {"pcie": {"GBps": 0}}})"),
      "rates.json:/links/pcie/GBps: expected a number > 0, got integer 0");
  CHECK_THROWS_WITH(
      rates(R"({"format": "protwin.rates", "version": 1, "links": {"pcie": {"GBps": 16}},
               "streams": {"h2d": {"links": ["pcie"], "GBps": 3}}})"),
      "rates.json:/streams/h2d/GBps: a stream with links moves its bytes over the links; use "
      "max_GBps for a per-transfer cap");
  CHECK_THROWS_WITH(
      rates(R"({"format": "protwin.rates", "version": 1, "streams": {"c": {"latency_us": -1}}})"),
      "rates.json:/streams/c/latency_us: expected a number >= 0, got integer -1");
}

TEST_CASE("RateCostModel: unlisted streams use the default, else unit rates", "[engine][rates]") {
  // Oracle: 1 TFLOPS = 1000 flops/ns and 1 GB/s = 1 byte/ns, so 5e6 flops + 700 bytes = 5700 ns.
  const auto unit = rates("{}");
  auto p = plan_with_streams({"compute", "d2h"});
  add_op(p, "d2h", "d2h", {}, 5e6, 700);
  CHECK(unit.cost(p.ops[0], p).stream_time() == SimTime(5700));
  const auto m = rates(R"({"streams": {"compute": {}}, "default": {"latency_us": 1, "GBps": 7}})");
  CHECK(m.cost(p.ops[0], p).stream_time() == SimTime(1000 + 100));  // default has no tflops: flops are free
}

TEST_CASE("RateCostModel::load reads a file and names it in errors", "[engine][rates]") {
  const std::string dir = PROTWIN_SOURCE_DIR;
  const auto m = hw::RateCostModel::load(dir + "/examples/rates.json");
  CHECK(!m.links().empty());
  CHECK_THROWS_WITH(hw::RateCostModel::load(dir + "/tests/sim/engine/no_such_rates.json"),
                    Catch::Contains("no_such_rates.json"));
}

TEST_CASE("RateCostModel: rates outside a sane range are refused, absurd work names op and rates", "[engine][rates]") {
  CHECK_THROWS_WITH(rates(R"({"streams": {"compute": {"latency_us": 1e300}}})"),
                    "rates.json:/streams/compute/latency_us: expected a number <= 1e+09, got number 1e+300");
  CHECK_THROWS_WITH(rates(R"({"streams": {"compute": {"tflops": 1e-300}}})"),
                    "rates.json:/streams/compute/tflops: expected a number >= 1e-06, got number 1e-300");
  CHECK_THROWS_WITH(rates(R"({"links": {"pcie": {"GBps": 1e12}}})"),
                    "rates.json:/links/pcie/GBps: expected a number <= 1e+09, got number 1000000000000.0");
  nlohmann::json inf = {{"default", {{"GBps", std::numeric_limits<double>::infinity()}}}};
  CHECK_THROWS_WITH(hw::RateCostModel::from_json(inf, "rates.json"),
                    "rates.json:/default/GBps: expected a finite number, got inf");
  CHECK_NOTHROW(rates(R"({"streams": {"compute": {"tflops": 0, "GBps": 0}}})"));  // 0: costs nothing
  // The slowest rates with the largest work: past the horizon, an error, not a negative time.
  const auto slow = rates(R"({"streams": {"compute": {"tflops": 1e-6}}})");
  auto p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute", {}, 1e30, 0);
  CHECK_THROWS_WITH(slow.cost(p.ops[0], p),
                    "plan op 0 (forward, stream compute): 1e+30 flops and 0 bytes take longer than the simulator's "
                    "horizon of 2^62 ns (146 years) at the rates of rates.json");
}
