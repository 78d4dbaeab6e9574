// The machine's host_dispatch section (DESIGN §4): validation with file and pointer, and the host
// time HardwareCostModel gives each op kind against closed forms of the section's values.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "traces/error.h"
#include "traces/json_reader.h"

using namespace protwin;
using namespace protwin::hw;

namespace {
nlohmann::json a100() { return traces::JsonDocument::parse(embedded_machine_json("a100-server"), "a100-server").json(); }

traces::Op op_of(const std::string& kind, nlohmann::json fields = nlohmann::json::object()) {
  // The typed fields as a plan file has them, beside "kind".
  fields.update({{"id", 0}, {"kind", kind}, {"stream", "compute"}});
  nlohmann::json j = {{"format", "protwin.plan"}, {"version", 4}, {"streams", {{{"name", "compute"}}}},
                      {"ops", nlohmann::json::array({std::move(fields)})}};
  return traces::plan_from_json(j, "test").ops[0];
}
}  // namespace

TEST_CASE("host_dispatch: a negative or non-finite host cost names the file and pointer (exit 2)", "[hwmodels][errors]") {
  for (const char* key : {"eager_op_us", "eager_op_autograd_us", "backward_op_us", "kernel_launch_us", "copy_call_us",
                          "collective_call_us", "optimizer_launch_us", "module_hook_us"}) {
    INFO(key);
    nlohmann::json j = a100();
    j["host_dispatch"][key] = -1.0;
    try {
      machine_from_json(j, "bad.json");
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 2);
      CHECK(std::string(e.what()).rfind(std::string("bad.json:/host_dispatch/") + key + ": expected a number >= 0, got number -1.0", 0) == 0);
    }
    j["host_dispatch"][key] = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                      Catch::Matchers::StartsWith(std::string("bad.json:/host_dispatch/") + key +
                                                  ": expected a finite number, got inf"));
  }
  nlohmann::json j = a100();
  j["host_dispatch"]["launch_queue_depth"] = 0;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"), Catch::Matchers::StartsWith("bad.json:/host_dispatch/launch_queue_depth"));
  j = a100();
  j["host_dispatch"]["hook_us"] = 1.0;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"), Catch::Matchers::Contains("hook_us"));
}

TEST_CASE("host_dispatch: host time per op kind, from the section's values", "[hwmodels]") {
  const Machine m = load_machine("a100-server");
  REQUIRE(m.host_dispatch.enabled);
  const HostDispatchSpec& h = m.host_dispatch;
  const HardwareCostModel cm(m);
  traces::Plan plan;
  plan.gpus = 4;
  auto host_us = [&](const traces::Op& op) { return static_cast<double>(cm.cost(op, plan).host_time().ns) / 1e3; };
  plan.kernel_sets = {{{{"gemm", {1024, 1024, 1024}, "fp16"}, 2}, {{"layernorm", {1024, 1024}, "fp16"}, 3}}};
  auto with_kernels = [](const std::string& kind, nlohmann::json fields = nlohmann::json::object()) {
    traces::Op op = op_of(kind, std::move(fields));
    op.kernels = 0;
    return op;
  };
  // 5 kernels: forward records autograd, backward runs as autograd-engine nodes.
  CHECK(host_us(with_kernels("forward")) == Approx(5 * (h.eager_op_autograd_us + h.kernel_launch_us)));
  CHECK(host_us(with_kernels("recompute")) == Approx(5 * (h.eager_op_autograd_us + h.kernel_launch_us)));
  CHECK(host_us(with_kernels("backward")) == Approx(5 * (h.backward_op_us + h.kernel_launch_us)));
  // A system's own host work on top: 4 hooks, 2 eager ops, 3 small copies.
  CHECK(host_us(with_kernels("forward", {{"host", {{"hooks", 4}, {"eager_ops", 2}, {"copies", 3}}}})) ==
        Approx(5 * (h.eager_op_autograd_us + h.kernel_launch_us) + 4 * h.module_hook_us +
               2 * (h.eager_op_us + h.kernel_launch_us) + 3 * h.copy_call_us));
  traces::Op copy = op_of("h2d");
  copy.pinned = true;
  copy.work.bytes = 1 << 20;
  CHECK(host_us(copy) == Approx(h.copy_call_us));
  CHECK_FALSE(cm.cost(copy, plan).host()->until_end);
  copy.pinned = false;  // a pageable copy blocks the host
  CHECK(cm.cost(copy, plan).host()->until_end);
  traces::Op ag = op_of("all_gather");
  ag.work.bytes = 1 << 20;
  CHECK(host_us(ag) == Approx(h.collective_call_us));
  CHECK(host_us(op_of("adam_device", {{"launches", 3}})) == Approx(3 * h.optimizer_launch_us));
  // CPU work is not issued by the host thread but marks the handoff.
  const OpCost adam = cm.cost(op_of("adam_cpu"), plan);
  CHECK(adam.host() == nullptr);
  CHECK(adam.stream()->on == PhaseOn::kCpu);
  CHECK(cm.cost(op_of("alloc"), plan).host() == nullptr);
  CHECK(cm.launch_queue_depth() == h.launch_queue_depth);
  // Turned off: no host time at all, the device time unchanged.
  Machine off = m;
  off.host_dispatch.enabled = false;
  const HardwareCostModel cm_off(off);
  const traces::Op f = with_kernels("forward");
  CHECK(cm_off.cost(f, plan).host() == nullptr);
  CHECK(cm_off.cost(f, plan).stream_time() == cm.cost(f, plan).stream_time());
  // Negative system counts in a plan are refused by its pointer.
  CHECK_THROWS_WITH(with_kernels("forward", {{"host", {{"hooks", -1}}}}),
                    Catch::Matchers::Contains("test:/ops/0/host/hooks: expected an integer >= 0, got integer -1"));
}
