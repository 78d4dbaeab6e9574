// protwin bench adam|stability (runtime binary): protwin's CPU Adam against torch::optim::Adam, side
// by side; how steady this machine's compute speed is. The simulator binary's `bench` hands both over.
#include <cstdio>

#include <unistd.h>

#include "cli/options.h"
#include "sim/calib/sample_stats.h"
#include "cli/subcommand.h"
#include "runtime/optim/bench_adam.h"
#include "runtime/profile/stability_probe.h"
#include "traces/error.h"

namespace protwin::cli {
namespace {

int bench_adam(const std::vector<std::string>& args) {
  po::options_description desc("options");
  int64_t params = 100000000;
  int threads = 1, repeat = 3;
  desc.add_options()
      ("what", po::value<std::string>(), "the benchmark (positional): adam")
      ("params", po::value(&params)->default_value(params), "fp32 parameters updated per step")
      ("threads", po::value(&threads)->default_value(threads), "threads of each optimizer")
      ("repeat", po::value(&repeat)->default_value(repeat), "timed steps per optimizer; the best is kept")
      ("json", "print JSON {params, protwin_params_per_s, torch_params_per_s, speedup, dram_GBps, ...}");
  po::variables_map vm;
  if (!parse_options("protwin bench adam [--params N] [--threads T] [--repeat R] [--json]", desc, args, vm,
                     po::positional_options_description().add("what", 1)))
    return 0;
  PROTWIN_CHECK(params >= 1, "--params: expected at least 1, got ", params);
  // Each run holds parameters, gradients and both moments in fp32: 16 B per parameter.
  const int64_t ram = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
  PROTWIN_CHECK(params <= ram / 16, "--params ", params, ": needs ", static_cast<double>(params) * 16 / (1 << 30),
                " GiB (16 B per parameter), more than this machine's ", ram >> 30, " GiB of memory");
  PROTWIN_CHECK(repeat >= 1, "--repeat: expected at least 1, got ", repeat);
  const rt::AdamBenchResult r = rt::bench_adam(params, threads, repeat);
  if (vm.count("json"))
    return print_json({{"params", r.params},
                       {"threads", r.threads},
                       {"repeat", r.repeats},
                       {"kernel", r.kernel},
                       {"protwin_seconds", r.protwin_seconds},
                       {"torch_seconds", r.torch_seconds},
                       {"protwin_params_per_s", r.protwin_params_per_s},
                       {"torch_params_per_s", r.torch_params_per_s},
                       {"speedup", r.speedup},
                       {"bytes_per_param", r.bytes_per_param},
                       {"dram_GBps", r.dram_GBps},
                       {"machine_dram_GBps", r.machine_dram_GBps},
                       {"fraction_of_dram", r.fraction_of_dram}});
  std::printf("adam: %lld fp32 params, %d thread(s), best of %d\n", static_cast<long long>(r.params), r.threads,
              r.repeats);
  std::printf("  protwin (%s): %.4f s  %.1f M params/s  %.2f GB/s (%lld B/param)\n", r.kernel.c_str(),
              r.protwin_seconds, r.protwin_params_per_s / 1e6, r.dram_GBps,
              static_cast<long long>(r.bytes_per_param));
  std::printf("  torch::optim::Adam: %.4f s  %.1f M params/s\n", r.torch_seconds, r.torch_params_per_s / 1e6);
  std::printf("  speedup: %.2fx\n", r.speedup);
  std::printf("  this machine's memory bandwidth (in-place a = 0.5a + x, same buffers and threads): %.2f GB/s (Adam reaches %.0f %%)\n",
              r.machine_dram_GBps, 100.0 * r.fraction_of_dram);
  return 0;
}

int bench_stability(const std::vector<std::string>& args) {
  po::options_description desc("options");
  rt::StabilityOptions o;
  desc.add_options()
      ("what", po::value<std::string>(), "the benchmark (positional): stability")
      ("seconds", po::value(&o.seconds)->default_value(o.seconds), "how long to sample")
      ("interval", po::value(&o.interval_s)->default_value(o.interval_s, "0.2"), "seconds between samples")
      ("threads", po::value(&o.threads)->default_value(o.threads), "ATen threads of the probe GEMMs")
      ("json", "print JSON {samples_gflops, samples, min, p10, median, p90, max, p10_p90_relative}");
  po::variables_map vm;
  if (!parse_options("protwin bench stability [--seconds S] [--interval I] [--threads T] [--json]", desc, args, vm,
                     po::positional_options_description().add("what", 1)))
    return 0;
  PROTWIN_CHECK(o.seconds > 0, "--seconds: expected a number > 0, got ", o.seconds);
  PROTWIN_CHECK(o.interval_s >= 0, "--interval: expected a number >= 0, got ", o.interval_s);
  const std::vector<double> g = rt::gemm_speed_samples(o);
  const calib::Spread s = calib::spread_of(g);
  if (vm.count("json")) {
    nlohmann::json j = s.to_json();
    j.update({{"samples_gflops", g}, {"threads", o.threads}, {"interval_s", o.interval_s},
              {"probe", "20 x fp32 GEMM 256x256x256 per sample"}});
    return print_json(j);
  }
  std::printf("stability: %zu samples of 20 fp32 GEMMs 256^3 (%d thread(s)), every %.2f s for %.1f s\n", s.n,
              o.threads, o.interval_s, o.seconds);
  std::printf("  GFLOPS: min %.1f  p10 %.1f  median %.1f  p90 %.1f  max %.1f\n", s.min, s.p10, s.median, s.p90,
              s.max);
  std::printf("  80 %% of the samples lie within a band %.1f %% of the median wide\n", 100 * s.relative);
  return 0;
}

// `protwin bench` (cli/bench.cpp) lists every benchmark and hands these two over.
int run_bench(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "adam") return bench_adam(args);
  if (!args.empty() && args[0] == "stability") return bench_stability(args);
  throw Error("the runtime's benchmarks are adam and stability\nhint: 'protwin bench --help' lists every benchmark");
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("bench", "runtime benchmarks (adam: CPU Adam vs torch::optim::Adam; stability: compute speed noise)", protwin::cli::run_bench)
