// Contention between streams (sim/engine/contention.h) against closed forms.
#include <catch2/catch.hpp>

#include <cmath>

#include "plan_builder.h"
#include "hwmodels/hardware_cost_model.h"
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
  const traces::Report r = PlanSimulator(m, {{"compute", {"copy"}, 1.5}}).run(p);
  CHECK(length_us(r, 0) == Approx(15.0).epsilon(1e-9));
  CHECK(length_us(r, 1) == Approx(102.0).epsilon(1e-9));  // no rule for the copy stream
}

TEST_CASE("a partly covered op is slowed over the covered part only: L = T + c (1 - 1 / s)", "[engine][contention]") {
  // The copy takes c = 2 us + 12000 B / 3 GB/s = 6 us from t = 0; the compute (T = 10 us alone)
  // does c / s of its work while the copy runs, the rest at full pace after it.
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  const double T = 10, c = 6, s = 2;
  const traces::Report r = PlanSimulator(m, {{"compute", {"copy"}, s}}).run(p);
  CHECK(length_us(r, 0) == Approx(T + c * (1 - 1 / s)).epsilon(1e-9));  // 13 us
  CHECK(length_us(r, 1) == Approx(c).epsilon(1e-9));
}

TEST_CASE("a beside op that starts and ends inside the slowed op moves its end twice", "[engine][contention]") {
  // compute: 10 us from 0. The copy (2 us + 6000 B / 3 GB/s = 4 us) waits for a 4 us op on another
  // stream: it runs [4, 8). The compute does 4 us of work by 4, 2 us over [4, 8) at half pace,
  // and its last 4 us by 12.
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
    "streams": {"compute": {"tflops": 1}, "other": {"tflops": 1}, "copy": {"latency_us": 2, "GBps": 3}}})");
  auto p = plan_with_streams({"compute", "other", "copy"});
  add_op(p, "forward", "compute", {}, 1e7, 0);
  const int first = add_op(p, "forward", "other", {}, 4e6, 0);
  add_op(p, "h2d", "copy", {first}, 0, 6000);
  const traces::Report r = PlanSimulator(m, {{"compute", {"copy"}, 2}}).run(p);
  CHECK(r.ops[2].start.ns == 4000);
  CHECK(r.ops[2].end.ns == 8000);
  CHECK(r.ops[0].end.ns == 12000);
}

TEST_CASE("two streams that slow each other share the time they overlap", "[engine][contention]") {
  // compute (10 us) runs at 1/2 beside CPU Adam, CPU Adam (20 us) at 1/1.5 beside compute, both
  // from 0: compute ends at 20; Adam has done 20 / 1.5 us of its work by then and the rest at full
  // pace, ending at 20 + 20 - 20 / 1.5.
  const auto m = rates(R"({"format": "protwin.rates", "version": 1,
    "streams": {"compute": {"tflops": 1}, "cpu_optim": {"tflops": 1}}})");
  auto p = plan_with_streams({"compute", "cpu_optim"});
  add_op(p, "forward", "compute", {}, 1e7, 0);
  add_op(p, "forward", "cpu_optim", {}, 2e7, 0);
  const traces::Report r = PlanSimulator(m, {{"compute", {"cpu_optim"}, 2}, {"cpu_optim", {"compute"}, 1.5}}).run(p);
  CHECK(length_us(r, 0) == Approx(20.0).epsilon(1e-9));
  CHECK(length_us(r, 1) == Approx(40.0 - 20.0 / 1.5).margin(1e-3));  // ns rounding
}

TEST_CASE("without rules the report is the plain simulation's, byte for byte", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  CHECK(traces::report_to_string(PlanSimulator(m, {}).run(p)) == traces::report_to_string(PlanSimulator(m).run(p)));
  // Rules for streams that never overlap, or that the plan does not have, change nothing either.
  const traces::Report r = PlanSimulator(m, {{"compute", {"cpu_optim"}, 3}, {"cpu_optim", {"copy"}, 3}}).run(p);
  CHECK(traces::report_to_string(r) == traces::report_to_string(PlanSimulator(m).run(p)));
}

TEST_CASE("the rules come from an op profile's measured contention", "[engine][contention]") {
  const nlohmann::json prov = {{"kind", "measured"},
                               {"contention",
                                {{"compute_slowdown_with_copies", 1.15},
                                 {"compute_slowdown_with_adam", 1.96},
                                 {"adam_slowdown_with_compute", 1.26},
                                 {"copy_slowdown_with_compute", 0.97}}}};
  const auto rules = hw::contention_rules_from_profile(prov);
  REQUIRE(rules.size() == 3);
  CHECK(rules[0].stream == "compute");
  CHECK(rules[0].beside == std::vector<std::string>{"h2d", "d2h"});
  CHECK(rules[0].slowdown == 1.15);
  CHECK(rules[1].beside == std::vector<std::string>{"cpu_optim"});
  CHECK(rules[2].stream == "cpu_optim");
  CHECK(hw::contention_rules_from_profile({{"kind", "derived"}}).empty());  // GPU profiles have none
}

// A rank profile (mpirun -np N protwin profile, issue 23) also measures compute beside the rank's
// collectives; its rule slows the plan's compute stream wherever the collective stream runs.
TEST_CASE("a rank profile's compute beside collectives slows compute under the collective stream", "[engine][contention]") {
  const nlohmann::json prov = {{"kind", "measured"},
                               {"contention", {{"compute_slowdown_with_copies", 1.15}, {"compute_slowdown_with_collectives", 1.9}}}};
  const auto rules = hw::contention_rules_from_profile(prov);
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
  const traces::Report r = PlanSimulator(m, rules).run(p);
  CHECK(length_us(r, 0) == Approx(19.0).epsilon(1e-9));
  CHECK(length_us(r, 1) == Approx(102.0).epsilon(1e-9));
}

TEST_CASE("generated ops (a streamed run) are slowed as the plan's are", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(12000);
  const std::vector<ContentionRule> rules = {{"compute", {"copy"}, 2}};
  PlanOpSource source(p);
  std::vector<traces::OpRecord> seen;
  PlanSimulator(m, rules).run(source, nullptr, [&](const traces::OpRecord& op) { seen.push_back(op); });
  const traces::Report whole = PlanSimulator(m, rules).run(p);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].end.ns == whole.ops[0].end.ns);
  CHECK(seen[0].end.ns == 13000);
  CHECK(seen[1].end.ns == whole.ops[1].end.ns);
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
  const auto rules = collective_sm_rules({"compute", "dp_comm"}, {"dp_comm"}, 108, 24);
  const traces::Report r = PlanSimulator(m, rules).run(p);
  CHECK(length_us(r, 0) == Approx(10.0 * 108 / 84).margin(1e-3));  // ns rounding
  CHECK(length_us(r, 1) == Approx(102.0).epsilon(1e-9));
}

TEST_CASE("rules whose combined slowdown is no pace are a user error naming the stream", "[engine][contention]") {
  const auto m = rates(kRates);
  const traces::Plan p = two_ops(300000);
  // 1 + (0.4 - 1) + (0.4 - 1) = -0.2 while the copy runs; one such rule alone is a pace (0.4).
  const std::vector<ContentionRule> two = {{"compute", {"copy"}, 0.4}, {"compute", {"copy"}, 0.4}};
  CHECK_THROWS_WITH(PlanSimulator(m, two).run(p), Catch::Matchers::StartsWith("stream compute: its contention rules "
                                                                              "slow it by 1 + the sum"));
  CHECK(length_us(PlanSimulator(m, {two[0]}).run(p), 0) == Approx(4.0).epsilon(1e-9));
}
