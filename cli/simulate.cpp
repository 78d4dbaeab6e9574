// protwin simulate: run a Plan through the discrete-event simulator and report what happened.
#include <cstdio>
#include <iostream>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "hwmodels/rate_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "traces/chrome_trace.h"
#include "traces/error.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::cli {
namespace {

int run_simulate(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string plan_path, rates_path, out_path, trace_path;
  desc.add_options()
      ("plan", po::value(&plan_path), "Plan to simulate (protwin.plan JSON)")
      ("rates", po::value(&rates_path),
       "per-stream rates (protwin.rates JSON); default: the plan's meta.rates, else built-in unit rates")
      ("output,o", po::value(&out_path), "write the Report (protwin.report JSON) here")
      ("chrome-trace", po::value(&trace_path), "write a Chrome trace (open in ui.perfetto.dev)")
      ("json", "print the summary as JSON");
  po::variables_map vm;
  if (!parse_options("protwin simulate --plan P.json [--rates R.json] [-o report.json] "
                     "[--chrome-trace trace.json] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "plan");

  const traces::Plan plan = traces::read_plan(plan_path);
  traces::validate(plan);
  hw::RateCostModel rates =
      !rates_path.empty() ? hw::RateCostModel::load(rates_path)
      : plan.meta.contains("rates")
          ? hw::RateCostModel::from_json(plan.meta["rates"], plan_path + ":/meta/rates")
          : hw::RateCostModel::from_json(nlohmann::json::object(), "built-in unit rates");
  sim::PlanSimulator simulator(rates);
  const traces::Report report = simulator.run(plan);

  if (!out_path.empty()) traces::write_report(report, out_path);
  if (!trace_path.empty()) traces::write_chrome_trace(report, trace_path);
  if (vm.count("json")) {
    print_json(report_summary_json(report));
  } else {
    print_report_summary(std::cout, report);
    if (!out_path.empty()) std::cout << "report:       " << out_path << "\n";
    if (!trace_path.empty()) std::cout << "chrome trace: " << trace_path << "  (open in ui.perfetto.dev)\n";
  }
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("simulate", "simulate one training iteration of a Plan", protwin::cli::run_simulate)
