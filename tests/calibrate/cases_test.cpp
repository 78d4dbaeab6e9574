// Case selection: deterministic (same inputs, same list), diverse (no two cases with the same
// knobs), every case fits the capped device, and it forces offloading (oracle: the all-resident
// DDP plan does not fit under the cap, so no case is DDP).
#include <catch2/catch.hpp>

#include "sim/calib/calibration.h"
#include "sim/calib/case_comparison.h"
#include "sim/calib/sample_stats.h"
#include "sim/calib/speed_scaled_prediction.h"
#include "hwmodels/machine.h"
#include "sim/offload/analytic/runtime_memory.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"

using namespace protwin;

namespace {
hw::Machine capped(int64_t bytes) { return calib::with_capacity(hw::load_machine("host-emulated"), bytes); }
// gpt2-tiny as the runtime runs it: fp32, eager attention.
sim::Workload runtime_workload(int64_t batch) {
  sim::WorkloadOptions wo;
  wo.batch = batch;
  wo.dtype = "fp32";
  wo.flash_attention = false;
  return sim::build_workload(sim::resolve_model("gpt2-tiny"), wo);
}
}  // namespace

TEST_CASE("calibration cases are deterministic, distinct and fit the capped device") {
  const sim::Workload w = runtime_workload(4);
  // 60 % of the all-resident plan's simulated peak (calibrate's default cap).
  const hw::HardwareCostModel big(capped(int64_t{1} << 40));
  const sim::offload::Candidate ddp = sim::offload::evaluate(w, big, 1, sim::offload::base_knobs("ddp"));
  REQUIRE(ddp.simulated);
  const int64_t cap = ddp.peak_gpu_bytes * 6 / 10;
  const hw::HardwareCostModel cost(capped(cap));

  const calib::CaseSelection a = calib::select_cases(w, cost, 12, 1);
  const calib::CaseSelection b = calib::select_cases(w, cost, 12, 2);
  REQUIRE(a.cases.size() == b.cases.size());
  CHECK(a.cases.size() >= 10);
  CHECK(a.cases.size() <= 12);
  for (size_t i = 0; i < a.cases.size(); ++i) {
    CHECK(a.cases[i].label == b.cases[i].label);
    CHECK(a.cases[i].knobs.to_json() == b.cases[i].knobs.to_json());
  }
  CHECK(a.cases.front().label == "search best");
  for (size_t i = 0; i < a.cases.size(); ++i) {
    CHECK(a.cases[i].system != "ddp");
    for (size_t j = 0; j < i; ++j) CHECK(a.cases[i].knobs.to_json() != a.cases[j].knobs.to_json());
    const sim::offload::Candidate c = sim::offload::evaluate(w, cost, 1, a.cases[i].knobs);
    CHECK(c.simulated);
    CHECK(c.bound_gpu_bytes <= cap);
  }
}

TEST_CASE("each round starts the plans at the next point of the golden-ratio sequence") {
  // Closed form: start_r = floor(frac(r x 0.6180339887) x n); n = 12: frac = 0, .618, .236, .854, .472
  // -> 0, 7, 2, 10, 5; every order is the rotation from its start.
  const size_t starts[] = {0, 7, 2, 10, 5};
  for (int r = 0; r < 5; ++r) {
    const std::vector<size_t> o = calib::round_plan_order(12, r);
    REQUIRE(o.size() == 12);
    for (size_t k = 0; k < 12; ++k) CHECK(o[k] == (starts[r] + k) % 12);
  }
  CHECK(calib::round_plan_order(3, 1) == std::vector<size_t>{1, 2, 0});  // frac .618 x 3 = 1.85
  CHECK(calib::round_plan_order(1, 4) == std::vector<size_t>{0});
  CHECK(calib::round_plan_order(0, 2).empty());
  CHECK_THROWS_WITH(calib::round_plan_order(12, -1), Catch::Contains("round -1"));
}

TEST_CASE("rotating the order keeps a first-place slowdown out of every plan's median") {
  // A synthetic harness bias: whichever plan runs first in a round is 4 % slow in all its steps.
  // Each plan's measurement is the median of its 3 steps in each of 3 rounds. Rotated, no plan is
  // first in more than one round, so at most 3 of its 9 steps are slow and the median is the true
  // time; in the fixed order plan 0 would be first in all three and 4 % slow.
  const size_t n = 12;
  const double first_place_slowdown = 1.04;
  std::vector<std::vector<double>> steps(n), fixed(n);
  for (int r = 0; r < 3; ++r) {
    const std::vector<size_t> o = calib::round_plan_order(n, r);
    for (size_t pos = 0; pos < n; ++pos)
      for (int s = 0; s < 3; ++s) {
        steps[o[pos]].push_back(1.0 * (pos == 0 ? first_place_slowdown : 1.0));
        fixed[pos].push_back(1.0 * (pos == 0 ? first_place_slowdown : 1.0));
      }
  }
  for (size_t i = 0; i < n; ++i) CHECK(calib::quantile(steps[i], 0.5) == 1.0);
  CHECK(calib::quantile(fixed[0], 0.5) == Approx(first_place_slowdown));
}

TEST_CASE("simulate_case is the search's evaluation of the knobs, its device peak the runtime's tensors") {
  const sim::Workload w = runtime_workload(2);
  const hw::HardwareCostModel cost(capped(int64_t{1} << 40));
  const sim::offload::OffloadKnobs k = sim::offload::base_knobs("ddp");
  const calib::SimulatedCase s = calib::simulate_case(w, cost, k);
  sim::offload::CompiledPlan plan;
  traces::Report report;
  const sim::offload::Candidate c = sim::offload::evaluate(w, cost, 1, k, &plan, &report);
  REQUIRE(c.simulated);
  CHECK(s.iteration_s == report.iteration.seconds());
  CHECK(s.busy.at("compute") == report.stream("compute")->busy.seconds());
  CHECK(s.peak.at("gpu_plan") == report.pool("gpu")->peak.n);
  CHECK(s.peak.at("gpu") == sim::offload::predict_runtime_memory(plan.plan, report).allocated_peak_bytes);
}
