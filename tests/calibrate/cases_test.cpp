// Case selection: deterministic (same inputs, same list), diverse (no two cases with the same
// knobs), every case fits the capped device, and it forces offloading (oracle: the all-resident
// DDP plan does not fit under the cap, so no case is DDP).
#include <catch2/catch.hpp>

#include "cli/calibration.h"
#include "hwmodels/machine.h"
#include "sim/policy/systems.h"
#include "sim/search/search.h"
#include "sim/workload/model_spec.h"

using namespace protwin;

namespace {
hw::Machine capped(int64_t bytes) {
  nlohmann::json j = hw::load_machine("host-emulated").json;
  j["gpu"]["memory_bytes"] = bytes;
  j["gpu"]["usable_memory_bytes"] = bytes;
  return hw::machine_from_json(j, "host-emulated (capped)");
}
}  // namespace

TEST_CASE("calibration cases are deterministic, distinct and fit the capped device") {
  sim::WorkloadOptions wo;
  wo.batch = 4;
  wo.dtype = "fp32";
  wo.flash_attention = false;
  const sim::Workload w = sim::build_workload(sim::resolve_model("gpt2-tiny"), wo);
  // 60 % of the all-resident plan's simulated peak (calibrate's default cap).
  const hw::HardwareCostModel big(capped(int64_t{1} << 40));
  const sim::Candidate ddp = sim::evaluate(w, big, 1, sim::base_knobs("ddp"));
  REQUIRE(ddp.simulated);
  const int64_t cap = ddp.peak_gpu_bytes * 6 / 10;
  const hw::HardwareCostModel cost(capped(cap));

  const cli::CaseSelection a = cli::select_cases(w, cost, 12, 1);
  const cli::CaseSelection b = cli::select_cases(w, cost, 12, 2);
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
    const sim::Candidate c = sim::evaluate(w, cost, 1, a.cases[i].knobs);
    CHECK(c.simulated);
    CHECK(c.bound_gpu_bytes <= cap);
  }
}
