// protwin simulate-4d: one training iteration of a Megatron-style 4D-parallel (DP/TP/PP/CP)
// layout on a cluster of nodes, simulated (sim/parallel/search/simulate_4d.h has the definitions of
// every number printed).
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "cli/options.h"
#include "cli/parallel_options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "sim/parallel/search/simulate_4d.h"
#include "traces/chrome_trace.h"
#include "traces/error.h"
#include "traces/record_spool.h"
#include "traces/report.h"

namespace protwin::cli {
namespace {

void print_result(std::ostream& os, const sim::parallel::Simulate4dResult& r) {
  const auto& o = r.options;
  const auto& pl = r.placement;
  os << "protwin simulate-4d: " << r.model << " on " << r.machine << ", " << pl.nodes << " node(s) x "
     << pl.gpus_per_node << " GPUs, " << r.world << " GPUs used\n"
     << format("layout      TP %lld  CP %lld  PP %lld  DP %lld  VPP %d  MBS %lld  GBS %lld  seq %lld  "
               "(%lld micro-batches, recompute %s, %s)\n",
               static_cast<long long>(o.sizes.tp), static_cast<long long>(o.sizes.cp),
               static_cast<long long>(o.sizes.pp), static_cast<long long>(o.sizes.dp), o.vpp,
               static_cast<long long>(o.mbs), static_cast<long long>(o.gbs), static_cast<long long>(o.seq),
               static_cast<long long>(r.microbatches), sim::parallel::recompute_name(o.recompute), o.dtype.c_str());
  if (o.split.uneven())
    os << "stages      uneven: first stage "
       << (o.split.first > 0 ? std::to_string(o.split.first) + " layers" : std::string("as the middle ones"))
       << ", last stage " << (o.split.last > 0 ? std::to_string(o.split.last) + " layers" : std::string("as the middle ones"))
       << ", the middle ones split the rest evenly\n";
  os << "groups     ";
  for (const sim::parallel::GroupPlacement* g : {&pl.tp, &pl.cp, &pl.dp_cp, &pl.pp})
    os << format(" %s %lld (%lld/node, %s)", g->name.c_str(), static_cast<long long>(g->size),
                 static_cast<long long>(g->ranks_per_node), g->scope());
  os << "\n\n"
     << format("iteration       %10.4f s\n", r.iteration_s)
     << format("tokens/s        %10.0f   (%.1f per GPU)\n", r.tokens_per_s, r.tokens_per_s / static_cast<double>(r.world))
     << format("TFLOPS/GPU      %10.1f   model flops, MFU %.1f %% of %.0f peak; %.1f with recompute\n",
               r.tflops_per_gpu, 100 * r.mfu, r.peak_tflops, r.hw_tflops_per_gpu)
     << format("bubble          %10.1f %% of the pipeline window (mean over stages; stage 0: %.1f %%)\n",
               100 * r.bubble_fraction, 100 * r.bubble_fraction_stage0)
     << format("memory          %10.2f GiB per GPU (Fujii et al., %s): %s 80 %% of %.0f GB (%.1f GiB)\n",
               r.memory.total_gib(),
               o.split.uneven() ? format("largest stage: %lld", static_cast<long long>(r.memory.stage)).c_str()
                                : "first stage", r.fits_80pct ? "fits under" : "does NOT fit under", r.gpu_memory_gb,
               r.memory_limit_gib)
     << priced_by_line(r.priced_by) << "\nbusy seconds per stage and stream (the simulated rank of each stage):\n";
  // Streams are named stage<s>.<role>: one row per stage, one column per role.
  const char* roles[] = {"compute", "tp_comm", "cp_comm", "dp_comm", "p2p"};
  std::map<int, std::map<std::string, double>> busy;
  std::set<std::string> present;
  for (const auto& s : r.streams) {
    const size_t dot = s.name.find('.');
    if (s.name.rfind("stage", 0) != 0 || dot == std::string::npos) continue;
    const std::string role = s.name.substr(dot + 1);
    busy[std::stoi(s.name.substr(5, dot - 5))][role] = s.busy.seconds();
    present.insert(role);
  }
  os << "stage";
  for (const char* role : roles)
    if (present.count(role)) os << format("%12s", role);
  os << "      bubble\n";
  for (const auto& [stage, per_role] : busy) {
    os << format("%5d", stage);
    for (const char* role : roles)
      if (present.count(role)) os << format("%12.4f", per_role.count(role) ? per_role.at(role) : 0.0);
    os << format("%10.1f %%\n", 100 * r.stage_bubble_fraction[static_cast<size_t>(stage)]);
  }
}

int run_simulate_4d(const std::vector<std::string>& args) {
  po::options_description desc("options");
  ParallelArgs pa;
  int64_t nodes = 0, tp = 1, pp = 1, cp = 1, dp = 1, mbs = 1;
  int vpp = 1;
  int64_t first_layers = 0, last_layers = 0;
  std::string trace_path, out_path, plan_out;
  desc.add_options()
      ("nodes", po::value(&nodes), "nodes (default: as many as TP*PP*CP*DP GPUs need)")
      ("tp", po::value(&tp)->default_value(1), "tensor-parallel size (with sequence parallelism)")
      ("pp", po::value(&pp)->default_value(1), "pipeline-parallel size (stages)")
      ("cp", po::value(&cp)->default_value(1), "context-parallel size")
      ("dp", po::value(&dp)->default_value(1), "data-parallel size")
      ("mbs", po::value(&mbs)->default_value(1), "micro-batch size")
      ("vpp", po::value(&vpp)->default_value(1), "model chunks per stage (interleaved 1F1B when > 1)")
      ("first-stage-layers", po::value(&first_layers)->default_value(0),
       "decoder layers on the first stage, the others split the rest (Megatron-LM's "
       "--decoder-first-pipeline-num-layers; 0: even)")
      ("last-stage-layers", po::value(&last_layers)->default_value(0),
       "decoder layers on the last stage (Megatron-LM's --decoder-last-pipeline-num-layers; 0: even)");
  add_parallel_options(desc, pa);
  desc.add_options()
      ("chrome-trace", po::value(&trace_path), "write a Chrome trace (one track per stream per stage)")
      ("output,o", po::value(&out_path), "write the Report (protwin.report JSON)")
      ("plan-out", po::value(&plan_out), "write the compiled plan: its kernel sets, every op described")
      ("no-collective-sms", "do not slow compute while a collective of its rank runs (the SMs its kernel holds, "
                            "the machine's /collectives/intra_node/ring_channels)")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("protwin simulate-4d --model M --machine NODE [--nodes N] --tp T --pp P --cp C --dp D "
                     "--mbs B --gbs G --seq S [--vpp V] [--first-stage-layers F] [--last-stage-layers L] "
                     "[--recompute none|selective|full] "
                     "[--chrome-trace t.json] [-o report.json] [--json]",
                     desc, args, vm))
    return 0;
  ParallelInputs in = resolve_parallel_inputs(pa, vm);
  sim::parallel::Simulate4dConfig cfg;
  cfg.options = in.options;
  cfg.options.sizes = {tp, cp, pp, dp};
  cfg.options.mbs = mbs;
  cfg.options.vpp = vpp;
  cfg.options.split = {first_layers, last_layers};
  cfg.nodes = nodes;
  cfg.gpu_memory_gb = pa.gpu_memory_gb;
  cfg.collective_sms = !vm.count("no-collective-sms");
  // Written as they come: the plan op by op as it is generated, the ops' records to a temporary
  // file as the simulation hands them out, the report and trace from it at the end.
  cfg.plan_path = plan_out;
  std::unique_ptr<traces::RecordSpool> records;
  if (!trace_path.empty() || !out_path.empty()) {
    records = std::make_unique<traces::RecordSpool>();
    cfg.records = [&](const traces::OpRecord& op) { records->add(op); };
  }
  const sim::parallel::Simulate4dResult r = sim::parallel::simulate_4d(in.model, *in.cost, cfg);
  if (records) {
    const traces::OpRecordVisitor ops = [&](const auto& f) { records->for_each(f); };
    if (!out_path.empty()) traces::write_report(r.report, ops, out_path);
    if (!trace_path.empty()) traces::write_chrome_trace(r.report, ops, trace_path);
  }
  const std::pair<const char*, const std::string*> written[] = {
      {"plan", &plan_out}, {"report", &out_path}, {"chrome trace (open in ui.perfetto.dev)", &trace_path}};
  // Outputs can be hundreds of MB: say how big (on stderr with --json, whose stdout is the JSON).
  const bool json = vm.count("json") > 0;
  if (json) print_json(sim::parallel::simulate_4d_to_json(r));
  else print_result(std::cout, r);
  std::ostream& os = json ? std::cerr : std::cout;
  for (const auto& [what, path] : written)
    if (!path->empty() && !(json && quiet())) os << "wrote " << what << ": " << *path << written_size(*path) << "\n";
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("simulate-4d", "simulate one iteration of a Megatron-style 4D-parallel (DP/TP/PP/CP) layout",
                   protwin::cli::run_simulate_4d)
