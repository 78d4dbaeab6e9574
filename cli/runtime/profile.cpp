// protwin profile: micro-benchmarks on the emulated device, written as a machine file and an op
// profile (provenance measured) for the simulator's hardware cost model (DESIGN §5, issue 7).
#include <cstdio>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "runtime/comm/rank_group.h"
#include "runtime/memory/copy_engine.h"
#include "runtime/profile/collective_probe.h"
#include "runtime/profile/block_profile.h"
#include "runtime/profile/profiler.h"
#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/plan.h"

namespace protwin::cli {
namespace {

int run_profile(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string machine_out = "host-emulated.json", profile_out, name = "host-emulated";
  std::vector<std::string> plans;
  rt::ProfileOptions o;
  double net_gbps = 0;
  int collective_reps = 9;
  desc.add_options()
      ("output,o", po::value(&machine_out)->default_value(machine_out),
       "machine file to write (protwin.machine; default in the current folder, so a run from the repository root "
       "never replaces the committed hwmodels/machines/host-emulated.json: name it with -o to update it)")
      ("profile-out", po::value(&profile_out),
       "op profile to write (protwin.profile; default: traces/profiles/<name>.json next to the machine's repo, "
       "or <output>.profile.json)")
      ("name", po::value(&name)->default_value(name), "machine name written into the file")
      ("plan", po::value(&plans)->composing(), "also time every kernel and every block of this plan (repeatable)")
      ("only-plans", "time only the plans' kernels, not the zoo's small models")
      ("link-GBps", po::value(&o.link_gbps)->default_value(o.link_gbps),
       "copy-worker throttle (as protwin train --link-GBps)")
      ("net-GBps", po::value(&net_gbps)->default_value(net_gbps),
       "under mpirun: the collectives' bus-bandwidth cap while they are timed (as protwin train --net-GBps; 0: uncapped)")
      ("collective-reps", po::value(&collective_reps)->default_value(collective_reps),
       "under mpirun: calls per collective kind and size (the median is fitted)")
      ("compute-threads", po::value(&o.compute_threads)->default_value(0),
       "ATen threads for the ops (0: the runtime's split for an offloading plan)")
      ("min-seconds", po::value(&o.min_seconds)->default_value(o.min_seconds, "0.06"), "time per op (over all rounds)")
      ("rounds", po::value(&o.rounds)->default_value(o.rounds), "passes over all ops (spreads load bursts of other processes)")
      ("json", "print a JSON summary");
  po::variables_map vm;
  if (!parse_options("protwin profile [-o machine.json] [--profile-out profile.json] [--plan P ...] "
                     "[--link-GBps X] [--json]", desc, args, vm))
    return 0;
  rt::check_link_gbps(o.link_gbps);
  PROTWIN_CHECK(net_gbps >= 0, "--net-GBps: expected a number >= 0, got ", net_gbps);
  PROTWIN_CHECK(collective_reps >= 1, "--collective-reps: expected at least 1, got ", collective_reps);
  PROTWIN_CHECK(o.min_seconds > 0, "--min-seconds: expected a number > 0, got ", o.min_seconds);
  if (profile_out.empty()) {
    const std::string suffix = "hwmodels/machines/" + name + ".json";
    if (machine_out.size() >= suffix.size() && machine_out.compare(machine_out.size() - suffix.size(), suffix.size(), suffix) == 0)
      profile_out = machine_out.substr(0, machine_out.size() - suffix.size()) + "traces/profiles/" + name + ".json";
    else
      profile_out = machine_out.substr(0, machine_out.rfind(".json")) + ".profile.json";
  }
  traces::require_writable(machine_out, "-o");
  traces::require_writable(profile_out, "--profile-out");
  std::vector<traces::OpSignature> sigs;
  if (!vm.count("only-plans"))
    for (const auto& m : rt::default_profile_models()) rt::merge_signatures(sigs, rt::model_signatures(m));
  std::vector<traces::Plan> read;  // each --plan file read once
  for (const auto& p : plans) read.push_back(traces::read_plan(p));
  for (const auto& plan : read) rt::merge_signatures(sigs, rt::plan_signatures(plan));
  PROTWIN_CHECK(!sigs.empty(), "--only-plans: no --plan given, nothing to time");
  rt::merge_signatures(sigs, rt::backward_signatures(sigs));
  // The plans' whole blocks as the runtime runs them (issue 22), after the kernels they contain.
  // Only for --plan: the zoo's small models' blocks would add about a minute to every profile.
  for (const auto& plan : read) rt::merge_signatures(sigs, rt::plan_block_signatures(plan));
  o.signatures = sigs;
  // The runtime's per-step work on a real step of the first one-GPU plan: this process replays it
  // alone (an N-GPU plan's step needs its N ranks; `calibrate --ranks` profiles with only such
  // plans, and then the empty-op chains' per-step intercept stands in).
  for (size_t i = 0; i < read.size(); ++i)
    if (read[i].gpus <= 1) {
      o.step_plan = plans[i];
      break;
    }
  PROTWIN_CHECK(o.rounds >= 1, "--rounds: expected at least 1, got ", o.rounds);
  Progress bar("profile", o.rounds + 5);
  o.progress = [&](long, long) { bar.tick(); };
  // Under mpirun the ranks time contention in step, compute beside their collectives too, and
  // the runtime's collectives together after their own ops.
  rt::RankGroup& ranks = rt::RankGroup::world();
  ranks.set_net_gbps(net_gbps);
  if (ranks.size() > 1) o.ranks = &ranks;
  // A rank that fails ends every rank: its peers would otherwise wait in the profile's collectives.
  rt::ProfileResult r;
  rt::run_or_abort_all(ranks, "protwin profile", [&] {
    r = rt::run_profile(o);
    if (ranks.size() > 1) {
      r.host.collective_rows = rt::probe_collectives(ranks, rt::default_collective_probe_bytes(), collective_reps);
      r.host.collectives = rt::fit_collectives(r.host.collective_rows);
      r.host.collective_ranks = ranks.size();
      r.host.collective_net_GBps = net_gbps;
    }
  });
  bar.done();
  const nlohmann::json machine = rt::machine_json(r.host, name);
  traces::write_file_atomic(machine_out, machine.dump(2) + "\n");
  r.profile.save(profile_out);
  const auto& h = r.host;
  if (vm.count("json"))
    return print_json({{"machine", machine_out},
                       {"profile", profile_out},
                       {"ops", r.profile.size()},
                       {"compute_threads", h.compute_threads},
                       {"sustained_tflops", machine["gpu"]["compute"]["fp32"]["sustained_tflops"]},
                       {"memory_GBps", machine["gpu"]["hbm"]["achievable_GBps"]},
                       {"dram_GBps", h.dram_GBps},
                       {"h2d_GBps", h.h2d_GBps},
                       {"d2h_GBps", h.d2h_GBps},
                       {"copy_latency_us", h.h2d_latency_us},
                       {"duplex_fraction", h.duplex_fraction},
                       {"cpu_adam_params_per_s_1_thread", h.adam_params_per_s_1t},
                       {"cpu_adam_params_per_s_all_cores", h.adam_params_per_s_all},
                       {"compute_slowdown_with_copies", h.compute_slowdown_with_copies},
                       {"compute_slowdown_with_adam", h.compute_slowdown_with_adam},
                       {"copy_slowdown_with_compute", h.copy_slowdown_with_compute},
                       {"adam_slowdown_with_compute", h.adam_slowdown_with_compute},
                       {"compute_slowdown_with_collectives", h.compute_slowdown_with_collectives},
                       {"collective_thread_cpu_share", h.collective_thread_cpu_share},
                       {"collective_tests_per_s", h.collective_tests_per_s},
                       {"collective_single_copy", h.collective_single_copy},
                       {"runtime_op_us", h.runtime_op_us},
                       {"runtime_step_us", h.runtime_step_us},
                       {"collectives", machine["collectives"]["intra_node"]}});
  std::printf("profiled %zu ops with %d compute thread(s) on %s\n", r.profile.size(), h.compute_threads, h.cpu.c_str());
  std::printf("  GEMM fp32          %.1f GFLOPS sustained (largest GEMM)\n",
              machine["gpu"]["compute"]["fp32"]["sustained_tflops"].get<double>() * 1e3);
  std::printf("  memory-bound ops   %.2f GB/s (compute threads), DRAM %.2f GB/s (all cores)\n",
              machine["gpu"]["hbm"]["achievable_GBps"].get<double>(), h.dram_GBps);
  std::printf("  copies             h2d %.3f GB/s, d2h %.3f GB/s at --link-GBps %g; latency %.1f us; duplex %.2f\n",
              h.h2d_GBps, h.d2h_GBps, o.link_gbps, h.h2d_latency_us, h.duplex_fraction);
  std::printf("  CPU Adam           %.3g params/s (1 thread), %.3g params/s (%d cores)\n", h.adam_params_per_s_1t,
              h.adam_params_per_s_all, h.cores);
  std::printf("  contention         GEMM x%.2f beside copies, x%.2f beside CPU Adam; copy x%.2f, Adam x%.2f beside compute\n",
              h.compute_slowdown_with_copies, h.compute_slowdown_with_adam, h.copy_slowdown_with_compute,
              h.adam_slowdown_with_compute);
  if (h.compute_slowdown_with_collectives > 0)
    std::printf("  contention         GEMM x%.2f beside this rank's collectives (%d ranks in step; their thread used "
                "%.2f of a core, %.0f MPI tests/s, %s)\n",
                h.compute_slowdown_with_collectives, ranks.size(), h.collective_thread_cpu_share,
                h.collective_tests_per_s, h.collective_single_copy ? "single-copy, backing off" : "20 us naps");
  std::printf("  runtime's own work %.2f us per plan op, %.0f us per step%s (host_dispatch)\n", h.runtime_op_us,
              h.runtime_step_us, o.step_plan.empty() ? " (empty-op plans)" : " (a real step of the first one-GPU --plan)");
  for (const auto& [kind, f] : h.collectives)
    std::printf("  %-18s alpha %.1f us, busbw %.3f GB/s (%d ranks, --net-GBps %g)\n", kind.c_str(), f.alpha_us,
                f.busbw_GBps, h.collective_ranks, h.collective_net_GBps);
  std::printf("machine: %s\nprofile: %s\n", machine_out.c_str(), profile_out.c_str());
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("profile", "measure the emulated device's ops, copies and CPU Adam into a machine file and an op profile",
                   protwin::cli::run_profile)
