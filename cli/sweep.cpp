// protwin sweep: the what-if grid (sim/offload/search/sweep.h). Each --set is one axis; every point of the
// Cartesian product is searched for its best policy. Table, JSON, CSV.
#include <algorithm>
#include <cstdio>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "hwmodels/cost_model_choice.h"
#include "hwmodels/machine.h"
#include "sim/offload/search/sweep.h"
#include "traces/error.h"
#include "traces/file_io.h"

namespace protwin::cli {
namespace {

const char* kUsage =
    "protwin sweep --model M --machine H --gpus N --set key=v1,v2,... [--set key2=...] [--system S|all]\n"
    "                     [--batch B|auto] [--json] [-o results.json] [--csv results.csv]\n"
    "\n"
    "Searches the best policy at every point of the grid (Cartesian product) of the --set values.\n"
    "  --set key=v1,v2,...          one axis over one machine field (the paths of 'protwin machine H --json',\n"
    "                               dotted: host.cores, host_link.h2d.pinned_GBps, gpu.memory_bytes, ...)\n"
    "  --set k1+k2=v1,v2,...        linked keys: one axis moving several fields together; each value goes\n"
    "                               to every key ...\n"
    "  --set k1+k2=a1:b1,a2:b2,...  ... or one value per key, ':'-separated in key order\n"
    "                               (e.g. a PCIe generation: host_link.h2d.pinned_GBps+host_link.d2h.pinned_GBps=12:13,25.1:26)\n"
    "  A --set with one value is a fixed override. At most 100000 points (grid x systems).\n"
    "Example: protwin sweep --model llama-13b --machine a100-server --gpus 4 --set host.cores=12,24,48,112\n"
    "Under mpirun (mpirun -np N protwin sweep ...) the points are split over the ranks; rank 0 prints.";

// Column header of an axis: its key when short, else [n] (the legend above the table names it).
std::string axis_header(const sim::offload::SweepAxis& a, size_t i) {
  return a.name().size() <= 20 ? a.name() : "[" + std::to_string(i + 1) + "]";
}

void print_table(const sim::offload::SweepResult& r) {
  std::printf("%s on %s, %d GPU(s): best policy at each of %zu sweep points (simulated)\n", r.model.c_str(),
              r.machine.c_str(), r.gpus, r.points.size());
  for (size_t i = 0; i < r.axes.size(); ++i)
    if (axis_header(r.axes[i], i) != r.axes[i].name())
      std::printf("  [%zu] %s\n", i + 1, r.axes[i].name().c_str());
  std::printf("\n");
  std::vector<int> width;
  for (size_t i = 0; i < r.axes.size(); ++i) {
    size_t w = axis_header(r.axes[i], i).size();
    for (const auto& l : r.axes[i].labels) w = std::max(w, l.size());
    width.push_back(static_cast<int>(w));
    std::printf("%*s  ", width.back(), axis_header(r.axes[i], i).c_str());
  }
  std::printf("%-12s %10s %5s %9s %8s %8s %8s %7s %6s %4s %4s %10s\n", "system", "tokens/s", "batch", "iter (s)",
              "fwd (s)", "bwd (s)", "opt (s)", "persist", "buffer", "swap", "ckpt", "peak GPU");
  for (const auto& p : r.points) {
    for (size_t i = 0; i < r.axes.size(); ++i)
      std::printf("%*s  ", width[i], r.axes[i].labels[p.index[i]].c_str());
    const auto& s = p.search;
    if (!s.found) {
      std::printf("%-12s %10s   (does not fit: needs at least %s per GPU)\n", s.system.c_str(), "-",
                  human_bytes(s.smallest_peak_gpu_bytes).c_str());
      continue;
    }
    const auto& b = s.best;
    std::printf("%-12s %10.1f %5lld %9.3f %8.3f %8.3f %8.3f %7d %6d %4d %4d %10s\n", s.system.c_str(), b.tokens_per_s,
                static_cast<long long>(b.batch), b.iteration_s, b.forward_s, b.backward_s, b.exposed_optimizer_s,
                b.knobs.n_persist, b.knobs.n_buffer, b.knobs.n_swap, b.knobs.n_checkpoint,
                human_bytes(b.peak_gpu_bytes).c_str());
  }
  std::printf("\nsweep: %zu points in %.2f s\n", r.points.size(), r.seconds);
}

int run_sweep(const std::vector<std::string>& args) {
  po::options_description desc("options");
  PolicyArgs pa;
  std::string system = "protrain", json_out, csv_out;
  desc.add_options()
      ("system", po::value(&system)->default_value("protrain"),
       "protrain, deepspeed, zero-offload, colossalai, fsdp, ddp, a comma-separated list, or all")
      ("output,o", po::value(&json_out), "write the results as JSON")
      ("csv", po::value(&csv_out), "write the results as CSV (one row per point)")
      ("json", "print JSON");
  add_policy_options(desc, pa);
  po::variables_map vm;
  if (!parse_options(kUsage, desc, args, vm)) return 0;
  PROTWIN_CHECK(!pa.set.empty(), "--set is required: give at least one axis, e.g. --set host.cores=12,24,48");

  sim::offload::SweepOptions o;
  for (const auto& s : pa.set) o.axes.push_back(sim::offload::parse_sweep_axis(s));
  o.systems = parse_systems(system, "system");
  PolicyArgs base = pa;
  base.set.clear();  // the axes are applied per point by the sweep
  PolicyInputs in = resolve_policy_inputs(base);
  o.search = in.search;
  o.profile = in.profile.get();
  std::string source;
  nlohmann::json machine_json = hw::load_machine_json(pa.machine, &source);
  if (pa.no_host_dispatch) hw::turn_off_host_dispatch(machine_json);

  Progress bar("sweeping", sim::offload::sweep_points(o.axes, o.systems.size()));
  o.progress = [&](long, long) { bar.tick(); };
  const sim::offload::SweepResult r = sim::offload::run_sweep(in.model, machine_json, source, o);
  bar.done();

  const nlohmann::json j = sim::offload::sweep_to_json(r);
  if (!json_out.empty()) traces::write_file_atomic(json_out, j.dump(2) + "\n");
  if (!csv_out.empty()) traces::write_file_atomic(csv_out, sim::offload::sweep_to_csv(r));
  if (vm.count("json")) return print_json(j);
  print_table(r);
  if (!json_out.empty()) std::printf("json: %s\n", json_out.c_str());
  if (!csv_out.empty()) std::printf("csv: %s\n", csv_out.c_str());
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("sweep", "what-if grid over machine fields, the best policy at every point", protwin::cli::run_sweep)
