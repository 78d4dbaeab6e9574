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
