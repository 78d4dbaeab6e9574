// protwin interleave: several plans measured step by step, round-robin, with a reference probe
// (a fixed GEMM's speed) just before and just after every step (runtime/train/interleaved.h).
// `protwin calibrate` runs it once per round; its JSON carries every raw step time and probe.
#include <cstdio>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "runtime/executor/runtime_plan.h"
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
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of the weights and the data start")
      ("data", po::value(&o.data), "text file for byte-level language modelling")
      ("device", po::value(&o.device)->default_value("auto"), "auto, cuda, or emulated")
      ("output,o", po::value(&out_paths)->composing(),
       "the measured Report of a plan's last step (repeat: one per --plan, same order)")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("protwin interleave --plan A.json --plan B.json ... [--steps N] [--link-GBps X] "
                     "[-o A-measured.json -o B-measured.json ...] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "plan");
  PROTWIN_CHECK(out_paths.empty() || out_paths.size() == plan_paths.size(), "--output: expected one per --plan (",
                plan_paths.size(), "), got ", out_paths.size());
  std::vector<rt::RuntimePlan> plans;
  for (const auto& p : plan_paths) plans.push_back(rt::load_runtime_plan(p));
  const rt::InterleavedResult r = rt::run_interleaved(plans, o);

  for (size_t i = 0; i < out_paths.size(); ++i) traces::write_report(r.plans[i].last_report, out_paths[i]);
  nlohmann::json jp = nlohmann::json::array();
  for (size_t i = 0; i < plans.size(); ++i) {
    const rt::InterleavedPlan& p = r.plans[i];
    jp.push_back({{"plan", plan_paths[i]},
                  {"iteration_s", p.iteration_s},
                  {"probe_before_gflops", p.probe_before},
                  {"probe_after_gflops", p.probe_after},
                  {"copy_probe_before_GBps", p.copy_probe_before},
                  {"copy_probe_after_GBps", p.copy_probe_after},
                  {"adam_probe_before_mparams_per_s", p.adam_probe_before},
                  {"adam_probe_after_mparams_per_s", p.adam_probe_after},
                  {"peak_device_bytes", p.peak_device_bytes},
                  {"peak_host_bytes", p.peak_host_bytes}});
  }
  const nlohmann::json out = {{"plans", jp},
                              {"steps", o.steps},
                              {"device", r.device},
                              {"compute_threads", r.compute_threads},
                              {"link_GBps", o.link_gbps},
                              {"probe", "60 x fp32 GEMM 256^3 (GFLOPS) at the profile's compute threads, just before and after every step"},
                              {"copy_probe", "1 MiB through the copy engine at --link-GBps (GB/s), beside the GEMM probe"},
                              {"adam_probe", "CPU Adam on 2^18 fp32 parameters, 1 thread (M params/s), beside the GEMM probe"}};
  if (vm.count("json")) {
    print_json(out);
    return 0;
  }
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
