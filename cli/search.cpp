// protwin search: the best policy of one system for a model on a machine, in simulation.
#include <cstdio>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "sim/offload/compiler/systems.h"
#include "traces/chrome_trace.h"
#include "traces/error.h"

namespace protwin::cli {
namespace {

int run_search(const std::vector<std::string>& args) {
  po::options_description desc("options");
  PolicyArgs pa;
  std::string system = "protrain", plan_out, trace_out, ablation;
  desc.add_options()
      ("system", po::value(&system)->default_value("protrain"), "protrain, deepspeed, zero-offload, colossalai, fsdp, ddp")
      ("output,o", po::value(&plan_out), "write the best plan (protwin.plan JSON)")
      ("chrome-trace", po::value(&trace_out), "write the best plan's simulated Chrome trace")
      ("pareto", "also print the Pareto front (throughput vs GPU memory)")
      ("ablation", po::value(&ablation), "all-ckpt | no-persist | no-buffer-reuse | no-overlap: search with one ProTrain feature off")
      ("json", "print JSON");
  add_policy_options(desc, pa);
  po::variables_map vm;
  if (!parse_options("protwin search --model M --machine H --gpus N [--batch B|auto] [--system S] [--seq S] "
                     "[--set k=v ...] [-o plan.json] [--json]",
                     desc, args, vm))
    return 0;
  PolicyInputs in = resolve_policy_inputs(pa);
  in.search.system = system;
  sim::offload::find_system(system);
  if (vm.count("ablation")) {
    if (ablation == "all-ckpt") in.search.all_checkpoint = true;
    else if (ablation == "no-persist") in.search.fix_n_persist = 0;
    else if (ablation == "no-buffer-reuse") in.search.force_buffer_reuse = 0;
    else if (ablation == "no-overlap") in.search.force_overlap = 0;
    else PROTWIN_CHECK(false, "--ablation: expected all-ckpt, no-persist, no-buffer-reuse or no-overlap, got '",
                       ablation, "'");
  }
  Progress bar("searching " + system, in.search.batch > 0 ? 1 : 7);
  in.search.progress = [&](long done, long) { if (done > 0) bar.tick(); };
  const sim::offload::SearchResult r = sim::offload::search_policy(in.model, *in.cost, in.search);
  bar.done();
  const sim::offload::RankMemory cap = sim::offload::rank_memory(in.cost->machine(), in.search.gpus, in.search.nodes);
  // The fields of the JSON found or not, and the search's.
  const nlohmann::json search = {{"system", system}, {"model", in.model.name}, {"machine", in.cost->machine().name},
                                 {"gpus", in.search.gpus}, {"nodes", in.search.nodes}, {"fits", r.found},
                                 {"configurations", r.configurations}, {"search_s", r.seconds}};
  if (!r.found && vm.count("json")) {
    nlohmann::json j = search;
    j.update({{"tokens_per_s", nullptr},
              {"closest_needs", {{"gpu_bytes", r.smallest_peak_gpu_bytes}, {"host_bytes", r.smallest_host_bytes}}},
              {"least_gpu_bytes", r.least_gpu_bytes},
              {"least_host_bytes", r.least_host_bytes},
              {"capacity", {{"gpu_bytes", cap.gpu_bytes}, {"host_bytes", cap.host_bytes}}},
              {"first_failure", r.first_failure}});
    return print_json(j);
  }
  PROTWIN_CHECK(r.found, "model ", in.model.name, " does not fit on ", in.cost->machine().name, " with ",
                in.search.gpus, " GPU(s) under any ", system, " knob setting (", r.configurations,
                " settings tried); the smallest needs ", human_bytes(r.smallest_peak_gpu_bytes),
                " of GPU memory (the GPU has ", human_bytes(cap.gpu_bytes), ") and ",
                human_bytes(r.smallest_host_bytes), " of host memory per rank (the host has ",
                human_bytes(cap.host_bytes), " per rank)",
                r.first_failure.empty() ? "" : "\n  the closest settings were refused: " + r.first_failure);
  if (!plan_out.empty()) traces::write_plan(r.best_plan.plan, plan_out);
  if (!trace_out.empty()) traces::write_chrome_trace(r.best_report, trace_out);
  const auto& b = r.best;
  if (vm.count("json")) {
    nlohmann::json pareto = nlohmann::json::array();
    for (const auto& c : r.pareto) pareto.push_back(nlohmann::json(c));
    // The best candidate's own fields (knobs, times, memory, priced_by) and the search's.
    nlohmann::json j = b;
    j.erase("bound_gpu_bytes");
    j.update(search);
    j.update({{"ablation", vm.count("ablation") ? nlohmann::json(ablation) : nlohmann::json()},
              {"chunks", r.best_plan.chunks->chunks.size()},
              {"layers", in.model.layers},
              {"global_batch", b.batch * in.search.gpus},
              {"seq", r.best_plan.plan.meta.value("seq", 0)},
              {"layer_modes", r.best_plan.plan.meta["layer_modes"]},
              {"pruned", r.pruned},
              {"simulated", r.simulated},
              {"pareto", pareto}});
    return print_json(j);
  }
  std::printf("%s on %s (%d GPU%s%s), %s, batch %lld per GPU (global %lld)\n", in.model.name.c_str(),
              in.cost->machine().name.c_str(), in.search.gpus, in.search.gpus > 1 ? "s" : "",
              in.search.nodes > 1 ? (" on " + std::to_string(in.search.nodes) + " nodes").c_str() : "", system.c_str(),
              static_cast<long long>(b.batch), static_cast<long long>(b.batch * in.search.gpus));
  std::printf("  throughput      %.1f tokens/s\n", b.tokens_per_s);
  std::printf("  iteration       %.3f s simulated (analytic model: %.3f s)\n", b.iteration_s, b.analytic_s);
  std::printf("    forward %.3f s, backward %.3f s, exposed optimizer %.3f s\n", b.forward_s, b.backward_s, b.exposed_optimizer_s);
  std::printf("  knobs           chunk %s, n_persist %d, n_buffer %d, n_swap %d, n_checkpoint %d (of %lld chunks, %lld layers)\n",
              b.knobs.per_block_chunks ? "per block" : human_bytes(b.knobs.chunk_bytes).c_str(), b.knobs.n_persist,
              b.knobs.n_buffer, b.knobs.n_swap,
              b.knobs.n_checkpoint, static_cast<long long>(r.best_plan.chunks->chunks.size()),
              static_cast<long long>(in.model.layers));
  std::printf("  peak memory     GPU %s (analytic %s), pinned %s, pageable %s\n", human_bytes(b.peak_gpu_bytes).c_str(),
              human_bytes(b.analytic_peak_gpu_bytes).c_str(), human_bytes(b.peak_pinned_bytes).c_str(),
              human_bytes(b.peak_pageable_bytes).c_str());
  std::printf("  initialisation  GPU %s, host %s per rank while the model is built and sharded\n",
              human_bytes(b.init_gpu_bytes).c_str(), human_bytes(b.init_host_bytes).c_str());
  std::printf("  search          %ld settings, %ld pruned by the peak model, %ld simulated, %.3f s\n", r.configurations,
              r.pruned, r.simulated, r.seconds);
  std::printf("  %s", priced_by_line(b.priced_by).c_str());
  if (vm.count("pareto")) {
    std::printf("\n  Pareto front (peak GPU memory -> tokens/s):\n");
    for (const auto& c : r.pareto)
      std::printf("    %12s  %10.1f tokens/s  batch %lld  persist %d buffer %d swap %d ckpt %d\n",
                  human_bytes(c.peak_gpu_bytes).c_str(), c.tokens_per_s, static_cast<long long>(c.batch),
                  c.knobs.n_persist, c.knobs.n_buffer, c.knobs.n_swap, c.knobs.n_checkpoint);
  }
  if (!plan_out.empty()) std::printf("  plan            %s\n", plan_out.c_str());
  if (!trace_out.empty()) std::printf("  chrome trace    %s\n", trace_out.c_str());
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("search", "find a system's best policy for a model on a machine", protwin::cli::run_search)
