// What prices a simulation (hwmodels/cost_model_choice.h): the machine's hardware model when a
// machine is named, else a rates file, else the plan's meta.rates, else unit rates; each checked
// by an op's closed-form time or the model's own fields.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "hwmodels/cost_model_choice.h"
#include "plan_builder.h"
#include "sim/engine/plan_simulator.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::sim::test;

namespace {
// One forward op of 1e12 flops on "compute": 1 s at 1 TFLOPS.
traces::Plan one_op_plan() {
  traces::Plan p = plan_with_streams({"compute"});
  add_op(p, "forward", "compute", {}, 1e12);
  return p;
}
SimTime time_of(const hw::CostModel& m, const traces::Plan& p) { return m.cost(p.ops[0], p).stream_time(); }
}  // namespace

TEST_CASE("cost model choice: rates file, then the plan's meta.rates, then unit rates") {
  traces::Plan p = one_op_plan();
  hw::CostModelChoice c;
  CHECK(time_of(*hw::plan_cost_model(c, p, "p.json").cost, p) == SimTime(1000000000));  // built-in 1 TFLOPS
  p.meta["rates"] = {{"format", "protwin.rates"}, {"version", 1}, {"default", {{"tflops", 4}}}};
  CHECK(time_of(*hw::plan_cost_model(c, p, "p.json").cost, p) == SimTime(250000000));
  const std::filesystem::path dir = std::filesystem::path(PROTWIN_BINARY_DIR) / "tests" / "cost_model_choice_tmp";
  std::filesystem::create_directories(dir);
  c.rates = (dir / "r.json").string();
  std::ofstream(c.rates) << R"({"format": "protwin.rates", "version": 1, "default": {"tflops": 8}})";
  CHECK(time_of(*hw::plan_cost_model(c, p, "p.json").cost, p) == SimTime(125000000));  // the file wins
  // A bad meta.rates is named by the plan's file and pointer.
  p.meta["rates"]["version"] = 9;
  c.rates.clear();
  CHECK_THROWS_WITH(hw::plan_cost_model(c, p, "p.json"),
                    Catch::StartsWith("p.json:/meta/rates") && Catch::Contains("unsupported rates version 9"));
}

TEST_CASE("cost model choice: a machine wins over rates, with its overrides, host dispatch and profile") {
  const traces::Plan p = one_op_plan();
  hw::CostModelChoice c;
  c.machine = "rtx3090-server";
  c.set = {"host.cores=7"};
  c.rates = "never-read.json";
  const auto chosen = hw::plan_cost_model(c, p, "p.json");
  const auto* hardware = dynamic_cast<const hw::HardwareCostModel*>(chosen.cost.get());
  REQUIRE(hardware != nullptr);
  CHECK(hardware->machine().name == "rtx3090-server");
  CHECK(hardware->machine().host.cores == 7);
  CHECK(hardware->machine().host_dispatch.enabled);
  CHECK(chosen.profile == nullptr);
  c.no_host_dispatch = true;
  c.profile = "rtx3090";
  const auto off = hw::machine_cost_model(c);
  CHECK_FALSE(off.cost->machine().host_dispatch.enabled);
  CHECK(off.cost->machine().json["host_dispatch"]["enabled"] == false);
  REQUIRE(off.profile != nullptr);  // the shipped profile, which the model prices from
  CHECK(off.profile->entries().size() > 0);
}

TEST_CASE("cost model choice: a profile's contention rules go with its cost model, and the engine applies them unless told others") {
  traces::Plan p = plan_with_streams({"compute", "h2d"});
  add_op(p, "forward", "compute", {}, 1e12);
  add_op(p, "h2d", "h2d", {}, 0, int64_t{1} << 28);  // beside the forward from t = 0
  hw::CostModelChoice c;
  c.machine = "host-emulated";
  c.profile = "host-emulated";  // measured on the emulated device: compute 1.10x slower beside the copies
  const auto chosen = hw::machine_cost_model(c);
  const auto rules = hw::contention_rules_from_profile(chosen.profile->provenance());
  REQUIRE(rules.size() == 3);
  REQUIRE(chosen.cost->contention().size() == rules.size());
  for (size_t k = 0; k < rules.size(); ++k) {
    CHECK(chosen.cost->contention()[k].stream == rules[k].stream);
    CHECK(chosen.cost->contention()[k].beside == rules[k].beside);
    CHECK(chosen.cost->contention()[k].slowdown == rules[k].slowdown);
  }
  const SimTime by_default = sim::PlanSimulator(*chosen.cost).run(p).iteration;
  CHECK(by_default == sim::PlanSimulator(*chosen.cost, rules).run(p).iteration);
  CHECK(by_default > sim::PlanSimulator(*chosen.cost, {}).run(p).iteration);
  c.profile = "none";  // no profile, no rules
  CHECK(hw::machine_cost_model(c).cost->contention().empty());
}
