// The host-dispatch thread of the PlanSimulator (DESIGN §4) against hand-computed timelines:
// launch order, run-ahead up to the launch queue, blocking at sync points and CPU work.
#include <catch2/catch.hpp>

#include <string>
#include <vector>
#include <utility>

#include "plan_builder.h"
#include "sim/engine/plan_simulator.h"
#include "traces/chrome_trace.h"
#include "traces/report.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::test;

namespace {
// Each op's device time is attrs.fixed_ns, its launch attrs.host_ns (0: not host-issued);
// attrs.sync keeps the host until the op ends; attrs.cpu makes the device time CPU work.
class HostCost final : public hw::CostModel {
 public:
  explicit HostCost(int depth = 1024) : depth_(depth) {}
  hw::OpCost cost(const traces::Op& op, const traces::Plan&) const override {
    hw::OpCost c;
    c.add(hw::on_host(SimTime(op.attrs.value("host_ns", int64_t{0})), op.attrs.value("sync", false)));
    c.add(hw::on_device(SimTime(op.attrs.value("fixed_ns", int64_t{0}))));
    if (op.attrs.value("cpu", false)) c.stream()->on = hw::PhaseOn::kCpu;
    return c;
  }
  int launch_queue_depth() const override { return depth_; }

 private:
  int depth_;
};

int op_with(traces::Plan& p, const std::string& stream, int64_t fixed, int64_t host, std::vector<int> deps = {}) {
  const int id = add_op(p, "forward", stream, std::move(deps));
  p.ops.back().attrs = {{"fixed_ns", fixed}, {"host_ns", host}};
  return id;
}

std::pair<int64_t, int64_t> span(const traces::Report& r, int op) {
  const auto& o = r.ops[static_cast<size_t>(op)];
  return {o.start.ns, o.end.ns};
}
std::pair<int64_t, int64_t> launch(const traces::Report& r, int op) {
  const auto& l = r.ops[static_cast<size_t>(op)].launch;
  REQUIRE(l.has_value());
  return {l->first.ns, l->second.ns};
}
using P = std::pair<int64_t, int64_t>;
}  // namespace

TEST_CASE("host dispatch: the GPU waits for launches, GPU-bound and host-bound closed forms", "[engine][host]") {
  SECTION("GPU-bound: host 4 ns, kernel 10 ns, 3 kernels: first launch + 3 x 10") {
    auto p = plan_with_streams({"compute"});
    for (int i = 0; i < 3; ++i) op_with(p, "compute", 10, 4);
    const auto r = PlanSimulator(HostCost()).run(p);
    CHECK(launch(r, 0) == P{0, 4});
    CHECK(launch(r, 1) == P{4, 8});
    CHECK(launch(r, 2) == P{8, 12});
    CHECK(span(r, 0) == P{4, 14});
    CHECK(span(r, 1) == P{14, 24});
    CHECK(span(r, 2) == P{24, 34});
    CHECK(r.iteration.ns == 4 + 3 * 10);
    REQUIRE(r.hosts.size() == 1);
    CHECK(r.hosts[0].name == "host");
    CHECK(r.hosts[0].busy.ns == 12);
    CHECK(r.hosts[0].ops == 3);
  }
  SECTION("host-bound: host 20 ns, kernel 5 ns: 3 x 20 + 5, the GPU idles between kernels") {
    auto p = plan_with_streams({"compute"});
    for (int i = 0; i < 3; ++i) op_with(p, "compute", 5, 20);
    const auto r = PlanSimulator(HostCost()).run(p);
    CHECK(span(r, 0) == P{20, 25});
    CHECK(span(r, 1) == P{40, 45});
    CHECK(span(r, 2) == P{60, 65});
    CHECK(r.iteration.ns == 3 * 20 + 5);
    CHECK(r.streams[0].busy.ns == 15);
  }
  SECTION("without host times the timeline is the old one and the report has no host") {
    auto p = plan_with_streams({"compute"});
    for (int i = 0; i < 3; ++i) op_with(p, "compute", 10, 0);
    const auto r = PlanSimulator(HostCost()).run(p);
    CHECK(r.iteration.ns == 30);
    CHECK(r.hosts.empty());
    CHECK_FALSE(r.ops[0].launch.has_value());
    CHECK(traces::report_to_json(r).count("hosts") == 0);
  }
}

TEST_CASE("host dispatch: run-ahead is bounded by the launch queue", "[engine][host]") {
  // Host 1 ns, kernel 10 ns, 3 kernels on one stream.
  auto p = plan_with_streams({"compute"});
  for (int i = 0; i < 3; ++i) op_with(p, "compute", 10, 1);
  SECTION("depth 1: each launch waits for the previous kernel to end") {
    const auto r = PlanSimulator(HostCost(1)).run(p);
    CHECK(launch(r, 0) == P{0, 1});
    CHECK(span(r, 0) == P{1, 11});
    CHECK(launch(r, 1) == P{11, 12});
    CHECK(span(r, 1) == P{12, 22});
    CHECK(launch(r, 2) == P{22, 23});
    CHECK(span(r, 2) == P{23, 33});
    CHECK(r.iteration.ns == 3 * (1 + 10));
  }
  SECTION("depth 2: two launches ahead; the third waits for the first kernel") {
    const auto r = PlanSimulator(HostCost(2)).run(p);
    CHECK(launch(r, 1) == P{1, 2});
    CHECK(launch(r, 2) == P{11, 12});
    CHECK(span(r, 1) == P{11, 21});
    CHECK(span(r, 2) == P{21, 31});
    CHECK(r.iteration.ns == 1 + 3 * 10);
  }
  SECTION("depth 1024: the host runs ahead, launches back to back") {
    const auto r = PlanSimulator(HostCost(1024)).run(p);
    CHECK(launch(r, 2) == P{2, 3});
    CHECK(r.iteration.ns == 1 + 3 * 10);
  }
}

TEST_CASE("host dispatch: sync points and CPU work block the host", "[engine][host]") {
  SECTION("a host_sync op (.item(), a pageable copy): the next launch waits for its end") {
    auto p = plan_with_streams({"compute"});
    op_with(p, "compute", 10, 1);
    p.ops.back().attrs["sync"] = true;
    op_with(p, "compute", 10, 1);
    const auto r = PlanSimulator(HostCost()).run(p);
    CHECK(span(r, 0) == P{1, 11});
    CHECK(launch(r, 1) == P{11, 12});
    CHECK(span(r, 1) == P{12, 22});
  }
  SECTION("a launch that needs CPU work's result (the CPU optimizer's handoff) waits for it, and so does "
          "everything the host issues after it") {
    auto p = plan_with_streams({"cpu_optim", "compute", "h2d"});
    const int adam = add_op(p, "adam_cpu", "cpu_optim");
    p.ops.back().attrs = {{"fixed_ns", 50}, {"cpu", true}};
    op_with(p, "h2d", 10, 1, {adam});  // uploads the updated parameters
    op_with(p, "compute", 10, 1);      // independent, but issued after it by the same thread
    const auto r = PlanSimulator(HostCost()).run(p);
    CHECK(span(r, 0) == P{0, 50});
    CHECK(launch(r, 1) == P{50, 51});
    CHECK(span(r, 1) == P{51, 61});
    CHECK(launch(r, 2) == P{51, 52});
    CHECK(span(r, 2) == P{52, 62});
    CHECK_FALSE(r.ops[0].launch.has_value());
  }
}

TEST_CASE("host dispatch: one host thread per rank, named by the streams' prefix", "[engine][host]") {
  auto p = plan_with_streams({"stage0.compute", "stage1.compute"});
  op_with(p, "stage0.compute", 10, 3);
  op_with(p, "stage1.compute", 10, 3);
  op_with(p, "stage0.compute", 10, 3);
  const auto r = PlanSimulator(HostCost()).run(p);
  // Each rank launches its own ops: both first kernels start at 3.
  CHECK(span(r, 0) == P{3, 13});
  CHECK(span(r, 1) == P{3, 13});
  CHECK(launch(r, 2) == P{3, 6});
  REQUIRE(r.hosts.size() == 2);
  CHECK(r.hosts[0].name == "stage0.host");
  CHECK(r.hosts[1].name == "stage1.host");
  CHECK(r.hosts[0].busy.ns == 6);

  // The report keeps the launches and hosts; the Chrome trace draws a host track per rank.
  const auto back = traces::report_from_json(traces::report_to_json(r), "r.json");
  CHECK(traces::report_to_string(back) == traces::report_to_string(r));
  const auto trace = traces::chrome_trace(r);
  int host_tracks = 0, launches = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"].get<std::string>().find("host") != std::string::npos)
      ++host_tracks;
    if (e["ph"] == "X" && e.value("cat", "") == "host") ++launches;
  }
  CHECK(host_tracks == 2);
  CHECK(launches == 3);
}

namespace {
// One op whose cost is the given phases, on a link of 10 GB/s (10 bytes/ns).
class PhasesCost final : public hw::CostModel {
 public:
  explicit PhasesCost(std::vector<hw::Phase> phases) : phases_(std::move(phases)) {}
  std::vector<hw::LinkSpec> links() const override { return {{"link", 10}}; }
  hw::OpCost cost(const traces::Op&, const traces::Plan&) const override {
    hw::OpCost c;
    for (const auto& ph : phases_) c.add(ph);
    return c;
  }

 private:
  std::vector<hw::Phase> phases_;
};
}  // namespace

TEST_CASE("an op's phases run in order: its host thread, then its stream, then its transfer", "[engine][host]") {
  auto p = plan_with_streams({"h2d"});
  add_op(p, "h2d", "h2d", {});
  // Launch 30 ns on the host, then 20 ns on the stream, then 1000 bytes at 10 bytes/ns.
  const PhasesCost three({hw::on_host(SimTime(30)), hw::on_device(SimTime(20)), hw::over_links({0, -1, -1}, 1000, 0)});
  const auto r = PlanSimulator(three).run(p);
  CHECK(launch(r, 0) == P{0, 30});
  CHECK(span(r, 0) == P{30, 30 + 20 + 100});
  CHECK(r.hosts.at(0).busy.ns == 30);
  // A transfer before the stream's time is not a cost the engine runs: refused as an internal error.
  const PhasesCost reversed({hw::over_links({0, -1, -1}, 1000, 0), hw::on_device(SimTime(20))});
  CHECK_THROWS_WITH(PlanSimulator(reversed).run(p), Catch::Contains("cost phases out of order"));
  // At most three phases fit an op's cost.
  hw::OpCost c;
  for (int i = 0; i < hw::OpCost::kMaxPhases; ++i) c.add(hw::on_device(SimTime(1)));
  CHECK_THROWS(c.add(hw::on_device(SimTime(1))));
}
