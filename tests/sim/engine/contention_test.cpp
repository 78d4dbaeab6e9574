// Contention between streams (sim/engine/contention.h) against closed forms.
#include <catch2/catch.hpp>

#include <cmath>

#include "plan_builder.h"
#include "sim/engine/contention.h"
#include "sim/engine/plan_simulator.h"
#include "traces/report.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::test;

namespace {
// compute: 1 TFLOPS (1e6 flops = 1 us); copy: 2 us latency + bytes at 3 GB/s, a fixed time.
const char* kRates = R"({"format": "protwin.rates", "version": 1,
  "streams": {"compute": {"tflops": 1}, "copy": {"latency_us": 2, "GBps": 3}}})";

// One 10 us compute op and one copy op of `copy_bytes`, both ready at 0.
traces::Plan two_ops(double copy_bytes) {
  auto p = plan_with_streams({"compute", "copy"});
  add_op(p, "forward", "compute", {}, 1e7, 0);
  add_op(p, "h2d", "copy", {}, 0, copy_bytes);
  return p;
}
double length_us(const traces::Report& r, int op) {
  return static_cast<double>(r.ops[static_cast<size_t>(op)].end.ns - r.ops[static_cast<size_t>(op)].start.ns) * 1e-3;
}
}  // namespace

TEST_CASE("an op wholly beside the other stream runs slowdown times longer", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(300000);  // the copy takes 102 us: it covers the compute throughout
  const traces::Report r = simulate_with_contention(p, m, {{"compute", {"copy"}, 1.5}});
  CHECK(length_us(r, 0) == Approx(15.0).epsilon(1e-9));
  CHECK(length_us(r, 1) == Approx(102.0).epsilon(1e-9));  // no rule for the copy stream
}

TEST_CASE("a partly covered op settles at the fixed point L = T (1 + (s - 1) c / L)", "[engine][contention]") {
  // The copy takes c = 2 us + 12000 B / 3 GB/s = 6 us from t = 0; the compute (T = 10 us alone) is
  // slowed by s = 2 over the share c / L of its length L that the copy covers:
  // L = T (1 + (s - 1) c / L)  =>  L^2 - T L - T (s - 1) c = 0.
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  const double T = 10, c = 6, s = 2;
  const double L = (T + std::sqrt(T * T + 4 * T * (s - 1) * c)) / 2;
  const traces::Report r = simulate_with_contention(p, m, {{"compute", {"copy"}, s}});
  CHECK(length_us(r, 0) == Approx(L).epsilon(1e-3));
  CHECK(length_us(r, 1) == Approx(c).epsilon(1e-9));
}

TEST_CASE("without rules the report is the plain simulation's, byte for byte", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  CHECK(traces::report_to_string(simulate_with_contention(p, m, {})) ==
        traces::report_to_string(PlanSimulator(m).run(p)));
  // Rules for streams that never overlap change nothing either.
  const traces::Report r = simulate_with_contention(p, m, {{"compute", {"cpu_optim"}, 3}});
  CHECK(length_us(r, 0) == Approx(10.0).epsilon(1e-9));
}

TEST_CASE("the rules come from an op profile's measured contention", "[engine][contention]") {
  const nlohmann::json prov = {{"kind", "measured"},
                               {"contention",
                                {{"compute_slowdown_with_copies", 1.15},
                                 {"compute_slowdown_with_adam", 1.96},
                                 {"adam_slowdown_with_compute", 1.26},
                                 {"copy_slowdown_with_compute", 0.97}}}};
  const auto rules = contention_rules_from_profile(prov);
  REQUIRE(rules.size() == 3);
  CHECK(rules[0].stream == "compute");
  CHECK(rules[0].beside == std::vector<std::string>{"h2d", "d2h"});
  CHECK(rules[0].slowdown == 1.15);
  CHECK(rules[1].beside == std::vector<std::string>{"cpu_optim"});
  CHECK(rules[2].stream == "cpu_optim");
  CHECK(contention_rules_from_profile({{"kind", "derived"}}).empty());  // GPU profiles have none
}

// A rank profile (mpirun -np N protwin profile, issue 23) also measures compute beside the rank's
// collectives; its rule slows the plan's compute stream wherever the collective stream runs.
TEST_CASE("a rank profile's compute beside collectives slows compute under the collective stream", "[engine][contention]") {
  const nlohmann::json prov = {{"kind", "measured"},
                               {"contention", {{"compute_slowdown_with_copies", 1.15}, {"compute_slowdown_with_collectives", 1.9}}}};
  const auto rules = contention_rules_from_profile(prov);
  REQUIRE(rules.size() == 2);
  CHECK(rules[1].stream == "compute");
  CHECK(rules[1].beside == std::vector<std::string>{"collective"});
  CHECK(rules[1].slowdown == 1.9);
  // 10 us of compute under a 102 us collective: 19 us; the collective keeps its own time.
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
    "streams": {"compute": {"tflops": 1}, "collective": {"latency_us": 2, "GBps": 3}}})");
  auto p = plan_with_streams({"compute", "collective"});
  add_op(p, "forward", "compute", {}, 1e7, 0);
  add_op(p, "all_gather", "collective", {}, 0, 300000);
  const traces::Report r = simulate_with_contention(p, m, rules);
  CHECK(length_us(r, 0) == Approx(19.0).epsilon(1e-9));
  CHECK(length_us(r, 1) == Approx(102.0).epsilon(1e-9));
}

// The generated-ops form (simulate-4d's streamed plans): each pass re-runs the simulation.
namespace {
ContentionRun run_plan(const traces::Plan& p, int& runs) {
  return [&p, &runs](const hw::CostModel& c, const OpRecordSink& sink) {
    ++runs;
    traces::Report r = PlanSimulator(c).run(p);
    if (sink)
      for (const auto& op : r.ops) sink(op);
    return r;
  };
}
}  // namespace

TEST_CASE("re-run passes settle at the same fixed point as the plan's passes", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  const double T = 10, c = 6, s = 2;
  const double L = (T + std::sqrt(T * T + 4 * T * (s - 1) * c)) / 2;
  int runs = 0;
  std::vector<traces::OpRecord> seen;
  const traces::Report r = simulate_with_contention(run_plan(p, runs), m, {{"compute", {"copy"}, s}},
                                                    [&](const traces::OpRecord& op) { seen.push_back(op); });
  // The passes stop once the iteration moves by at most 0.1 % from one to the next: near, not at,
  // the fixed point (0.3 % here, where each pass closes only about half the gap).
  CHECK(length_us(r, 0) == Approx(L).epsilon(5e-3));
  CHECK(length_us(r, 1) == Approx(c).epsilon(1e-9));
  CHECK(runs <= 1 + 4 + 1);
  // The plan form's passes settle on the same lengths.
  CHECK(length_us(r, 0) == Approx(length_us(simulate_with_contention(p, m, {{"compute", {"copy"}, s}}), 0)).epsilon(5e-3));
  // The caller's sink saw the returned run's records, once each.
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].end.ns == r.ops[0].end.ns);
}

TEST_CASE("re-run passes out of passes: the report and a sink's records come from the same scales", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  const std::vector<ContentionRule> rules = {{"compute", {"copy"}, 2}};
  int runs = 0;
  // One pass does not settle this plan (each pass closes about half the gap to the fixed point).
  const traces::Report quiet = simulate_with_contention(run_plan(p, runs), m, rules, nullptr, 1);
  CHECK(runs == 3);  // unstretched, one pass, then the run at the scales the pass left
  std::vector<traces::OpRecord> seen;
  const traces::Report sunk =
      simulate_with_contention(run_plan(p, runs), m, rules, [&](const traces::OpRecord& op) { seen.push_back(op); }, 1);
  CHECK(traces::report_to_string(quiet) == traces::report_to_string(sunk));
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].end.ns == quiet.ops[0].end.ns);
  // Not settled, so not the fixed point the test above reaches.
  CHECK(length_us(quiet, 0) != Approx(length_us(simulate_with_contention(p, m, rules), 0)).epsilon(5e-3));
}

TEST_CASE("re-run passes: one simulation without the other stream's ops, two when they never overlap", "[engine][contention]") {
  const auto m = rates(kRates);
  auto p = plan_with_streams({"compute", "copy"});
  add_op(p, "forward", "compute", {}, 1e7, 0);
  int runs = 0;
  traces::Report r = simulate_with_contention(run_plan(p, runs), m, {{"compute", {"copy"}, 2}}, nullptr);
  CHECK(runs == 1);
  CHECK(traces::report_to_string(r) == traces::report_to_string(PlanSimulator(m).run(p)));
  add_op(p, "h2d", "copy", {0}, 0, 12000);  // after the compute: no overlap
  runs = 0;
  r = simulate_with_contention(run_plan(p, runs), m, {{"compute", {"copy"}, 2}}, nullptr);
  CHECK(runs == 2);  // the copy's interval, then the compute's scale against it (1: settled)
  CHECK(traces::report_to_string(r) == traces::report_to_string(PlanSimulator(m).run(p)));
}

TEST_CASE("a collective's CTAs take their SMs from the compute of the same rank", "[engine][contention]") {
  const std::vector<std::string> streams = {"stage0.compute", "stage0.tp_comm", "stage0.dp_comm", "stage0.cp_comm", "stage0.p2p",
                                            "stage1.compute", "stage1.p2p", "stage2.compute", "stage2.dp_comm"};
  // torch 2.1's NCCL 2.18 on an 8-GPU NVSwitch H100 node: 24 ring channels of 132 SMs.
  const std::vector<std::string> roles = {"tp_comm", "dp_comm"};
  const auto rules = collective_sm_rules(streams, roles, 132, 24);
  REQUIRE(rules.size() == 2);  // stage1 has no collective stream (p2p and cp_comm carry send/recv)
  CHECK(rules[0].stream == "stage0.compute");
  CHECK(rules[0].beside == std::vector<std::string>{"stage0.tp_comm", "stage0.dp_comm"});
  CHECK(rules[0].slowdown == Approx(132.0 / 108.0).epsilon(1e-15));
  CHECK(rules[1].stream == "stage2.compute");
  CHECK(rules[1].beside == std::vector<std::string>{"stage2.dp_comm"});
  CHECK(collective_sm_rules(streams, roles, 132, 0).empty());  // channels unknown
  CHECK(collective_sm_rules({"compute", "dp_comm"}, roles, 108, 24).size() == 1);  // a one-rank plan's names
}

TEST_CASE("a compute op wholly beside a collective runs sms / (sms - channels) times longer", "[engine][contention]") {
  // A100: 108 SMs, 24 channels: 10 us of compute under a 102 us collective takes 10 x 108 / 84 us.
  const char* k = R"({"format": "protwin.rates", "version": 1,
    "streams": {"compute": {"tflops": 1}, "dp_comm": {"latency_us": 2, "GBps": 3}}})";
  const auto m = rates(k);
  auto p = plan_with_streams({"compute", "dp_comm"});
  add_op(p, "forward", "compute", {}, 1e7, 0);
  add_op(p, "all_gather", "dp_comm", {}, 0, 300000);
  int runs = 0;
  const auto rules = collective_sm_rules({"compute", "dp_comm"}, {"dp_comm"}, 108, 24);
  const traces::Report r = simulate_with_contention(run_plan(p, runs), m, rules, nullptr);
  CHECK(length_us(r, 0) == Approx(10.0 * 108 / 84).margin(1e-3));  // ns rounding
  CHECK(length_us(r, 1) == Approx(102.0).epsilon(1e-9));
}
