// protwin compare: every system at its own best knobs and batch size, and ProTrain's speed-up
// over each (REFERENCE §1: "each tuned, each at its best batch size").
#include <cstdio>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "sim/distributed/evaluate_points.h"
#include "sim/offload/compiler/systems.h"
#include "traces/chrome_trace.h"

namespace protwin::cli {
namespace {

int run_compare(const std::vector<std::string>& args) {
  po::options_description desc("options");
  PolicyArgs pa;
  std::string trace_out, plan_out;
  desc.add_options()
      ("chrome-trace", po::value(&trace_out), "write the simulated Chrome trace of ProTrain's best plan")
      ("output,o", po::value(&plan_out), "write ProTrain's best plan")
      ("json", "print JSON");
  add_policy_options(desc, pa);
  po::variables_map vm;
  if (!parse_options("protwin compare --model M --machine H --gpus N [--json]", desc, args, vm)) return 0;
  PolicyInputs in = resolve_policy_inputs(pa);

  const auto& all = sim::offload::systems();
  const std::function<sim::offload::SearchResult(size_t)> search_system = [&](size_t i) {
    sim::offload::SearchOptions o = in.search;
    o.system = all[i].name;
    sim::offload::SearchResult r = sim::offload::search_policy(in.model, *in.cost, o);
    // ProTrain is listed first; whichever process (MPI rank) searched it writes its best plan.
    if (i == 0 && r.found) {
      if (!trace_out.empty()) traces::write_chrome_trace(r.best_report, trace_out);
      if (!plan_out.empty()) traces::write_plan(r.best_plan.plan, plan_out);
    }
    return r;
  };
  Progress bar("comparing systems", static_cast<long>(all.size()));
  std::vector<sim::offload::SearchResult> results;
  for (const auto& outcome : sim::evaluate_points(all.size(), 1, search_system, [&](long, long) { bar.tick(); }))
    results.push_back(outcome.get());
  bar.done();
  const sim::offload::SearchResult& pt = results.front();  // protrain is listed first

  nlohmann::json systems = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json j = {{"name", r.system}};
    if (r.found) {
      const auto& b = r.best;
      j.update({{"tokens_per_s", b.tokens_per_s}, {"batch", b.batch}, {"global_batch", b.batch * in.search.gpus},
                {"knobs", b.knobs.to_json()},
                {"iteration_s", b.iteration_s}, {"forward_s", b.forward_s}, {"backward_s", b.backward_s},
                {"exposed_optimizer_s", b.exposed_optimizer_s}, {"peak_gpu_bytes", b.peak_gpu_bytes},
                {"peak_pinned_bytes", b.peak_pinned_bytes}, {"peak_pageable_bytes", b.peak_pageable_bytes},
                {"priced_by", b.priced_by}});
      if (pt.found && r.system != "protrain") j["protrain_speedup"] = pt.best.tokens_per_s / b.tokens_per_s;
    } else {
      j.update({{"tokens_per_s", nullptr}, {"batch", nullptr}, {"global_batch", nullptr}, {"knobs", nullptr}, {"iteration_s", nullptr},
                {"forward_s", nullptr}, {"backward_s", nullptr}, {"exposed_optimizer_s", nullptr},
                {"peak_gpu_bytes", nullptr}, {"smallest_peak_gpu_bytes", r.smallest_peak_gpu_bytes},
                {"smallest_host_bytes", r.smallest_host_bytes}, {"least_gpu_bytes", r.least_gpu_bytes},
                {"least_host_bytes", r.least_host_bytes}});
    }
    systems.push_back(j);
  }
  if (vm.count("json"))
    return print_json({{"model", in.model.name}, {"machine", in.cost->machine().name}, {"gpus", in.search.gpus},
                       {"nodes", in.search.nodes}, {"seq", in.search.seq > 0 ? in.search.seq : in.model.default_seq},
                       {"systems", systems}});
  std::printf("%s on %s, %d GPU(s)%s: every system at its best knobs and batch size (simulated; batch is per GPU)\n\n",
              in.model.name.c_str(), in.cost->machine().name.c_str(), in.search.gpus,
              in.search.nodes > 1 ? (" on " + std::to_string(in.search.nodes) + " nodes").c_str() : "");
  std::printf("%-13s %11s %6s %10s %9s %9s %9s %11s %11s  %s\n", "system", "tokens/s", "batch", "iter (s)", "fwd (s)",
              "bwd (s)", "optim (s)", "peak GPU", "host/rank", "ProTrain speed-up");
  for (const auto& r : results) {
    if (!r.found) {
      std::printf("%-13s %11s   (does not fit: needs at least %s per GPU and %s of host memory per rank)\n",
                  r.system.c_str(), "-", human_bytes(r.smallest_peak_gpu_bytes).c_str(),
                  human_bytes(r.smallest_host_bytes).c_str());
      continue;
    }
    const auto& b = r.best;
    const std::string speedup =
        pt.found && r.system != "protrain" ? format("%.2fx", pt.best.tokens_per_s / b.tokens_per_s) : "";
    std::printf("%-13s %11.1f %6lld %10.3f %9.3f %9.3f %9.3f %11s %11s  %s\n", r.system.c_str(), b.tokens_per_s,
                static_cast<long long>(b.batch), b.iteration_s, b.forward_s, b.backward_s, b.exposed_optimizer_s,
                human_bytes(b.peak_gpu_bytes).c_str(), human_bytes(b.peak_pinned_bytes + b.peak_pageable_bytes).c_str(),
                speedup.c_str());
  }
  if (pt.found) std::printf("\nProTrain's best plan: %s", priced_by_line(pt.best.priced_by).c_str());
  if (!trace_out.empty() && pt.found) std::printf("\nchrome trace of ProTrain's best plan: %s\n", trace_out.c_str());
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("compare", "every system at its best knobs and batch, with ProTrain's speed-ups", protwin::cli::run_compare)
