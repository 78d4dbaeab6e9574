// protwin interleave: several plans measured step by step, round-robin, with a reference probe
// (a fixed GEMM's speed) just before and just after every step (runtime/train/interleaved.h).
// `protwin calibrate` runs it once per round; its JSON carries every raw step time and probe.
#include <algorithm>
#include <cstdio>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "runtime/comm/rank_group.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/profile/block_profile.h"
#include "runtime/profile/profile_shapes.h"
#include "runtime/train/interleaved.h"
#include "traces/error.h"
#include "traces/report.h"

namespace protwin::cli {
namespace {

int run_interleave(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::vector<std::string> plan_paths, out_paths;
  rt::InterleaveOptions o;
  desc.add_options()
      ("plan", po::value(&plan_paths)->composing(), "a Plan to replay (repeat for each plan; fp32, 1 GPU)")
      ("steps", po::value(&o.steps)->default_value(o.steps), "steps per plan (the first is warm-up)")
      ("link-GBps", po::value(&o.link_gbps)->default_value(o.link_gbps),
       "throttle each host<->device copy direction to this rate (0: memcpy speed)")
      ("net-GBps", po::value(&o.net_gbps)->default_value(o.net_gbps),
       "on N ranks (mpirun -np N): cap each collective's bus bandwidth at this rate (0: uncapped)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of the weights and the data start")
      ("data", po::value(&o.data), "text file for byte-level language modelling")
      ("device", po::value(&o.device)->default_value("auto"), "auto, cuda, or emulated")
      ("output,o", po::value(&out_paths)->composing(),
       "the measured Report of a plan's last step (repeat: one per --plan, same order)")
      ("block-probes", "also time every block the plans run (embedding, decoder layer, head; forward and backward) "
                       "once after every step, as `protwin profile --plan` times it (one rank only)")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("[mpirun -np G] protwin interleave --plan A.json --plan B.json ... [--steps N] [--link-GBps X] "
                     "[--block-probes] [-o A-measured.json -o B-measured.json ...] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "plan");
  PROTWIN_CHECK(out_paths.empty() || out_paths.size() == plan_paths.size(), "--output: expected one per --plan (",
                plan_paths.size(), "), got ", out_paths.size());
  rt::RankGroup& ranks = rt::RankGroup::world();
  std::vector<rt::RuntimePlan> plans;
  for (const auto& p : plan_paths) plans.push_back(rt::load_runtime_plan(p, ranks.size()));
  if (ranks.size() > 1) o.ranks = &ranks;
  if (vm.count("block-probes"))
    for (const auto& p : plan_paths) rt::merge_signatures(o.block_probes, rt::plan_block_signatures(traces::read_plan(p)));
  rt::InterleavedResult r;
  rt::run_or_abort_all(ranks, "protwin interleave", [&] { r = rt::run_interleaved(plans, o); });
  // On N ranks: every rank's step times and probes, per plan ([rank][step]); a step of the
  // group lasts until its slowest rank is done.
  std::vector<nlohmann::json> per_rank(plans.size());
  if (ranks.size() > 1)
    for (size_t i = 0; i < plans.size(); ++i) {
      rt::InterleavedPlan& p = r.plans[i];
      const std::pair<const char*, const std::vector<double>*> series[] = {
          {"gemm_before_gflops", &p.probe_before},       {"gemm_after_gflops", &p.probe_after},
          {"copy_before_GBps", &p.copy_probe_before},     {"copy_after_GBps", &p.copy_probe_after},
          {"adam_before_mparams_per_s", &p.adam_probe_before}, {"adam_after_mparams_per_s", &p.adam_probe_after}};
      for (const auto& [key, values] : series) per_rank[i][key] = ranks.all_gather(*values);
      const std::vector<std::vector<double>> steps = ranks.all_gather(p.iteration_s);
      per_rank[i]["iteration_s"] = steps;
      const std::vector<std::vector<double>> losses = ranks.all_gather(p.losses);
      for (size_t s = 0; s < p.losses.size(); ++s) {  // the global batch's mean loss, summed in rank order
        double sum = 0;
        for (const auto& rank_losses : losses) sum += rank_losses[s];
        p.losses[s] = sum / ranks.size();
      }
      for (size_t s = 0; s < p.iteration_s.size(); ++s)
        for (const auto& rank_steps : steps) p.iteration_s[s] = std::max(p.iteration_s[s], rank_steps[s]);
    }
  if (ranks.rank() != 0) return 0;  // rank 0 reports

  for (size_t i = 0; i < out_paths.size(); ++i) traces::write_report(r.plans[i].last_report, out_paths[i]);
  nlohmann::json jp = nlohmann::json::array();
  for (size_t i = 0; i < plans.size(); ++i) {
    const rt::InterleavedPlan& p = r.plans[i];
    jp.push_back({{"plan", plan_paths[i]},
                  {"iteration_s", p.iteration_s},
                  {"losses", p.losses},
                  {"probe_before_gflops", p.probe_before},
                  {"probe_after_gflops", p.probe_after},
                  {"copy_probe_before_GBps", p.copy_probe_before},
                  {"copy_probe_after_GBps", p.copy_probe_after},
                  {"adam_probe_before_mparams_per_s", p.adam_probe_before},
                  {"adam_probe_after_mparams_per_s", p.adam_probe_after},
                  {"peak_device_bytes", p.peak_device_bytes},
                  {"peak_host_bytes", p.peak_host_bytes}});
    if (ranks.size() > 1) jp.back()["ranks"] = per_rank[i];
  }
  nlohmann::json blocks = nlohmann::json::array();
  for (const rt::BlockProbeSeries& b : r.block_probes) blocks.push_back({{"signature", b.sig.key()}, {"us", b.us}});
  nlohmann::json out = {{"plans", jp},
                              {"steps", o.steps},
                              {"device", r.device},
                              {"compute_threads", r.compute_threads},
                              {"link_GBps", o.link_gbps},
                              {"ranks", ranks.size()},
                              {"net_GBps", o.net_gbps},
                              {"probe", "60 x fp32 GEMM 256^3 (GFLOPS) at the profile's compute threads, just before and after every step"},
                              {"copy_probe", "1 MiB through the copy engine at --link-GBps (GB/s), beside the GEMM probe"},
                              {"adam_probe", "CPU Adam on 2^18 fp32 parameters, 1 thread (M params/s), beside the GEMM probe"}};
  if (vm.count("block-probes")) {
    out["block_probes"] = blocks;
    out["block_probe"] = "each block the plans run, one run (us) after every step (in run order), timed as protwin "
                         "profile --plan times it (48 MiB cache flush, input warm)";
  }
  if (vm.count("json")) return print_json(out);
  std::printf("%zu plans, %lld steps each, interleaved step by step (%s, %d compute threads)\n", plans.size(),
              static_cast<long long>(o.steps), r.device.c_str(), r.compute_threads);
  std::printf("%-4s %-6s %10s %14s\n", "plan", "step", "seconds", "probe GFLOPS");
  for (size_t i = 0; i < plans.size(); ++i)
    for (size_t s = 0; s < r.plans[i].iteration_s.size(); ++s)
      std::printf("%-4zu %-6zu %10.4f %14.1f\n", i, s + 1, r.plans[i].iteration_s[s], r.plans[i].probe_before[s]);
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("interleave", "run several plans step by step, round-robin, with a reference probe beside every step",
                   protwin::cli::run_interleave)
