// protwin validate: check a Plan before anything runs (DAG, streams, tensors, memory fit).
#include <iostream>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "traces/plan.h"

namespace protwin::cli {
namespace {

int run_validate(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string plan_path;
  desc.add_options()("plan", po::value(&plan_path), "Plan to check (protwin.plan JSON)")(
      "json", "print the result as JSON");
  po::variables_map vm;
  if (!parse_options("protwin validate --plan P.json [--json]", desc, args, vm)) return 0;
  require(vm, "plan");
  const traces::Plan plan = traces::read_plan(plan_path);
  const traces::ValidationResult v = traces::validate(plan);
  if (vm.count("json")) {
    nlohmann::json pools = nlohmann::json::array();
    for (const auto& p : v.pools)
      pools.push_back({{"name", p.name}, {"capacity_bytes", p.capacity.n},
                       {"high_water_bytes", p.high_water.n}, {"op_at_high_water", p.op_at_high_water}});
    return print_json({{"valid", true}, {"ops", plan.ops.size()}, {"streams", plan.streams.size()},
                       {"tensors", plan.tensors.size()}, {"chunks", plan.chunks.size()}, {"pools", pools}});
  }
  std::cout << plan_path << ": valid plan: " << plan.ops.size() << " ops on " << plan.streams.size()
            << " streams, " << plan.tensors.size() << " tensors, " << plan.chunks.size() << " chunks\n";
  for (const auto& p : v.pools) {
    std::printf("  pool %-10s high-water %14lld bytes of %14lld (%5.1f %%)\n", p.name.c_str(),
                static_cast<long long>(p.high_water.n), static_cast<long long>(p.capacity.n),
                p.capacity.n ? 100.0 * static_cast<double>(p.high_water.n) / static_cast<double>(p.capacity.n) : 0.0);
  }
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("validate", "check a Plan: DAG, streams, tensors, memory fit", protwin::cli::run_validate)
