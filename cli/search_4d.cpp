// protwin search-4d: the fastest 4D-parallel (DP/TP/PP/CP) layouts of a model on N nodes. The
// estimator's 80 % rule prunes, the simulator ranks every layout that fits (sim/parallel/search/search_4d.h).
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/options.h"
#include "cli/parallel_options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "sim/parallel/search/search_4d.h"
#include "traces/error.h"

namespace protwin::cli {
namespace {

// The table of the simulated layouts, fastest first.
void print_ranked(std::ostream& os, const sim::parallel::Search4dResult& r, size_t top) {
  os << "\n   #  TP  CP  PP    DP  MBS     m   iter (s)     tokens/s  TFLOPS/GPU    MFU  bubble  mem GiB\n";
  size_t shown = 0;
  for (const auto& row : r.ranked) {
    if (!row.simulated || shown >= top) continue;
    const auto& c = row.candidate;
    const auto& s = row.result;
    os << format("%4zu %3lld %3lld %3lld %5lld %4lld %5lld %10.3f %12.0f %11.1f %5.1f%% %6.1f%% %8.2f\n", ++shown,
                 static_cast<long long>(c.tp), static_cast<long long>(c.cp), static_cast<long long>(c.pp),
                 static_cast<long long>(c.dp), static_cast<long long>(c.mbs), static_cast<long long>(s.microbatches),
                 s.iteration_s, s.tokens_per_s, s.tflops_per_gpu, 100 * s.mfu, 100 * s.bubble_fraction,
                 s.memory_gib());
    if (c.split.uneven())  // after the row's newline, so even rows print as before
      os << format("       PP %lld above: the first and last stage hold %lld and %lld layers, the others even\n",
                   static_cast<long long>(c.pp), static_cast<long long>(c.split.first),
                   static_cast<long long>(c.split.last));
  }
  if (static_cast<size_t>(r.simulated) > shown)
    os << "  ... " << static_cast<size_t>(r.simulated) - shown << " more (--top K, --json)\n";
}

void print_search(std::ostream& os, const sim::parallel::Search4dResult& r, size_t top, int threads) {
  const auto& e = r.enumeration;
  os << "protwin search-4d: " << r.model << " on " << r.machine << ", " << r.nodes << " node(s) x "
     << r.gpus_per_node << " GPUs = " << r.world << " GPUs, seq " << r.options.seq << ", GBS " << r.options.gbs
     << ", recompute " << sim::parallel::recompute_name(r.options.recompute) << ", " << r.options.dtype << "\n"
     << "enumerated " << e.enumerated << " layouts: " << e.fitting.size() << " fit under 80 % of "
     << format("%.0f GB (%.1f GiB)", r.gpu_memory_gb, e.threshold_gib);
  if (r.over_mbs_max) os << ", " << r.over_mbs_max << " of them over --mbs-max";
  os << "; " << r.simulated << " simulated" << (r.failed ? format(", %lld refused", static_cast<long long>(r.failed)) : "")
     << format(" in %.2f s (%d threads)\n", r.seconds, threads);
  if (!e.rejected_by_reason.empty()) os << "rejected: " << counts_text(e.rejected_by_reason) << "\n";
  if (r.simulated > 0) print_ranked(os, r, top);
  for (const auto& row : r.ranked)
    if (!row.simulated)
      os << format("refused: TP %lld CP %lld PP %lld DP %lld MBS %lld: ", static_cast<long long>(row.candidate.tp),
                   static_cast<long long>(row.candidate.cp), static_cast<long long>(row.candidate.pp),
                   static_cast<long long>(row.candidate.dp), static_cast<long long>(row.candidate.mbs))
         << row.failure << "\n";
}

int run_search_4d(const std::vector<std::string>& args) {
  po::options_description desc("options");
  ParallelArgs pa;
  int64_t nodes = 0, mbs_max = 0;
  size_t top = 10;
  int threads = 2;
  desc.add_options()
      ("nodes", po::value(&nodes), "nodes (all their GPUs are used)")
      ("top", po::value(&top), "list the K fastest layouts (default 10 in the table, all in JSON)")
      ("mbs-max", po::value(&mbs_max), "largest micro-batch size to try (default: up to GBS/DP)")
      ("threads", po::value(&threads)->default_value(2), "threads simulating layouts")
      ("uneven-stages", "also try PP sizes that divide layers + 2, the first and last stage one layer short "
                        "(Llama 3 405B: 126 layers at PP 16 = 7 + 14 x 8 + 7)")
      ("collective-sms", "slow compute beside its rank's collectives by the SMs their kernels hold, as simulate-4d "
                         "does (off here: it costs each layout a few simulations)");
  add_parallel_options(desc, pa);
  desc.add_options()("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("protwin search-4d --model M --machine NODE --nodes N --seq S --gbs G [--top K] "
                     "[--mbs-max B] [--uneven-stages] [--recompute none|selective|full] [--threads 2] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "nodes");
  PROTWIN_CHECK(!vm.count("top") || top >= 1, "--top ", top, ": must be at least 1");
  ParallelInputs in = resolve_parallel_inputs(pa, vm);
  sim::parallel::Search4dOptions o;
  o.nodes = nodes;
  o.mbs_max = mbs_max;
  o.base = in.options;
  o.gpu_memory_gb = pa.gpu_memory_gb;
  o.threads = threads;
  o.uneven_stages = vm.count("uneven-stages") > 0;
  o.collective_sms = vm.count("collective-sms") > 0;
  // Created when the number of layouts to simulate is known; `done` may jump (other threads).
  std::unique_ptr<Progress> bar;
  long shown = 0;
  o.progress = [&](long done, long n) {
    if (!bar) bar = std::make_unique<Progress>("simulating layouts", n);
    if (done > shown) bar->tick(done - shown);
    shown = std::max(shown, done);
  };
  const sim::parallel::Search4dResult r = sim::parallel::search_4d(in.model, *in.cost, o);
  if (bar) bar->done();
  if (vm.count("json")) return print_json(sim::parallel::search_4d_to_json(r, vm.count("top") ? top : 0));
  print_search(std::cout, r, top, threads);
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("search-4d", "rank every 4D-parallel layout that fits (estimator) by simulated throughput",
                   protwin::cli::run_search_4d)
