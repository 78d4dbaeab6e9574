// protwin train: replay a Plan for real on the emulated device, one iteration per optimizer step,
// on byte-level language modelling; report losses, iteration times, tokens/s and memory peaks.
#include <cstdio>
#include <iostream>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "runtime/comm/rank_group.h"
#include "runtime/comm/wait_probe.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/profile/block_profile.h"
#include "runtime/train/trainer.h"
#include "traces/chrome_trace.h"
#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/report.h"

namespace protwin::cli {
namespace {

int run_train(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string plan_path, out_path, trace_path, rank_reports;
  rt::TrainOptions o;
  desc.add_options()
      ("plan", po::value(&plan_path), "Plan to replay (protwin.plan JSON, fp32; N GPUs: under mpirun -np N)")
      ("steps", po::value(&o.steps)->default_value(o.steps), "train until this many optimizer steps are done")
      ("data", po::value(&o.data)->default_value(o.data), "text file for byte-level language modelling")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of the weights and the data start")
      ("lr", po::value(&o.lr)->default_value(o.lr), "Adam learning rate")
      ("link-GBps", po::value(&o.link_gbps)->default_value(o.link_gbps),
       "throttle each host<->device copy direction to this rate (0: memcpy speed)")
      ("net-GBps", po::value(&o.net_gbps)->default_value(o.net_gbps),
       "cap each collective's bus bandwidth between the ranks at this rate (0: uncapped)")
      ("device", po::value(&o.device)->default_value("auto"),
       "auto (CUDA when this build and machine have it, else the emulated device), cuda, or emulated")
      ("compute-threads", po::value(&o.compute_threads)->default_value(0),
       "ATen threads of the emulated device (0: all cores, one fewer when the plan offloads)")
      ("output,o", po::value(&out_path), "write the measured Report of the last step here")
      ("chrome-trace", po::value(&trace_path), "write a Chrome trace of the last step")
      ("rank-reports", po::value(&rank_reports),
       "every rank writes the measured Report of its last step to DIR/rank<R>.json (meta.steady_start_ns "
       "aligns the ranks' clocks)")
      ("checkpoint", po::value(&o.checkpoint_dir), "write checkpoints into this folder")
      ("checkpoint-every", po::value(&o.checkpoint_every)->default_value(0),
       "steps between checkpoints (0: after the last step only)")
      ("resume", po::value(&o.resume_dir), "resume from the checkpoint in this folder")
      ("probes", "time the reference probes (GEMM, copy, CPU Adam) on every rank before and after every step; "
                 "--json gets rank_probes (and on N ranks wait_cpu_share: the core a rank uses waiting for a late peer)")
      ("block-probes", "time every block the plan runs (embedding, decoder layer, head; forward and backward) once "
                       "after every step on every rank, the ranks together, as `protwin profile --plan` times it; "
                       "--json gets rank_block_probes")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("[mpirun -np G] protwin train --plan P.json --steps N [--data FILE] [--seed S] [--lr LR] [--link-GBps X] [--net-GBps Y] "
                     "[--device auto|cuda|emulated] [--compute-threads T] [-o measured.json] [--chrome-trace t.json] "
                     "[--rank-reports DIR] [--probes] [--block-probes] [--checkpoint DIR [--checkpoint-every K]] [--resume DIR] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "plan");
  require(vm, "steps");
  PROTWIN_CHECK(o.lr > 0 && o.lr <= 1000, "--lr ", o.lr, ": expected a learning rate > 0 (and at most 1000)");
  if (!rank_reports.empty()) traces::create_folders(rank_reports, "--rank-reports");
  rt::RankGroup& ranks = rt::RankGroup::world();
  const rt::RuntimePlan rp = rt::load_runtime_plan(plan_path, ranks.size());
  o.probes = vm.count("probes") > 0;
  if (vm.count("block-probes")) o.block_probes = rt::plan_block_signatures(rp.plan);
  rt::TrainResult r;
  rt::run_or_abort_all(ranks, "protwin train", [&] { r = rt::train(rp, o); });
  // Every rank's probes, [rank][step], gathered in rank order (every rank takes part in the all-gathers).
  std::vector<nlohmann::json> rank_probes(static_cast<size_t>(ranks.size()), nlohmann::json::array());
  if (o.probes) {
    for (const rt::StepProbes& p : r.probes) {
      const std::pair<const char*, double> fields[] = {
          {"gemm_before_gflops", p.gemm_before}, {"gemm_after_gflops", p.gemm_after},
          {"copy_before_GBps", p.copy_before},   {"copy_after_GBps", p.copy_after},
          {"adam_before_mparams_per_s", p.adam_before}, {"adam_after_mparams_per_s", p.adam_after}};
      std::vector<nlohmann::json> step(rank_probes.size(), nlohmann::json::object());
      for (const auto& [key, value] : fields) {
        const std::vector<double> all = ranks.all_gather(value);
        for (size_t k = 0; k < all.size(); ++k) step[k][key] = all[k];
      }
      for (size_t k = 0; k < rank_probes.size(); ++k) rank_probes[k].push_back(step[k]);
    }
  }
  // Every rank's block probes, [rank][{signature, us}] (every rank takes part in the all-gathers).
  std::vector<nlohmann::json> rank_block_probes(static_cast<size_t>(ranks.size()), nlohmann::json::array());
  if (!o.block_probes.empty()) {
    for (const rt::BlockProbeSeries& b : r.block_probes) {
      const std::vector<std::vector<double>> us = ranks.all_gather(b.us);
      for (size_t k = 0; k < us.size(); ++k)
        rank_block_probes[k].push_back({{"signature", b.sig.key()}, {"us", us[k]}});
    }
  }
  // With the probes: the core a rank uses while it waits for a late peer (runtime/comm/wait_probe.h).
  const double wait_cpu_share = o.probes ? rt::measure_wait_cpu_share(ranks) : 0;
  if (!rank_reports.empty())
    traces::write_report(r.last_report, rank_reports + "/rank" + std::to_string(r.rank) + ".json");
  if (r.rank != 0) return 0;  // rank 0 reports (its own device; the losses are the global batch's)

  if (!out_path.empty()) traces::write_report(r.last_report, out_path);
  if (!trace_path.empty()) traces::write_chrome_trace(r.last_report, trace_path);
  if (vm.count("json")) {
    nlohmann::json j = {{"plan", plan_path},
                {"model", rp.plan.meta.value("model", "")},
                {"device", r.device},
                {"batch", rp.batch},
                {"ranks", r.ranks},
                {"seq", rp.seq},
                {"first_step", r.first_step},
                {"last_step", r.last_step},
                {"losses", r.losses},
                {"iteration_s", r.iteration_s},
                {"tokens_per_s", r.tokens_per_s},
                {"peak_device_bytes", r.peak_device_bytes},
                {"peak_device_reserved_bytes", r.peak_device_reserved_bytes},
                {"peak_pinned_bytes", r.peak_pinned_bytes},
                {"peak_pageable_bytes", r.peak_pageable_bytes},
                {"plan_peak_device_bytes", r.plan_peak_device_bytes},
                {"plan_device_high_water_bytes", r.plan_device_high_water},
                {"device_capacity_bytes", r.device_capacity},
                {"peak_host_bytes", r.peak_host_bytes},
                {"compute_threads", r.compute_threads},
                {"link_GBps", o.link_gbps},
                {"net_GBps", o.net_gbps}};
    if (o.probes) j["rank_probes"] = rank_probes;
    if (!o.block_probes.empty()) j["rank_block_probes"] = rank_block_probes;
    if (o.probes && ranks.size() > 1) j["wait_cpu_share"] = wait_cpu_share;
    return print_json(j);
  }
  std::printf("plan %s: %s, batch %lld x seq %lld, %d rank(s), %d compute threads\n", plan_path.c_str(),
              rp.plan.meta.value("model", std::string("?")).c_str(), static_cast<long long>(rp.batch),
              static_cast<long long>(rp.seq), r.ranks, r.compute_threads);
  std::printf("%6s  %10s  %10s\n", "step", "loss", "seconds");
  for (size_t i = 0; i < r.losses.size(); ++i)
    std::printf("%6lld  %10.6f  %10.4f\n", static_cast<long long>(r.first_step + static_cast<int64_t>(i)),
                r.losses[i], r.iteration_s[i]);
  std::printf("tokens/s:          %.1f\n", r.tokens_per_s);
  std::printf("peak device bytes: %lld measured (%lld reserved); the plan's: %lld at the real times, high-water "
              "%lld, capacity %lld\n",
              static_cast<long long>(r.peak_device_bytes), static_cast<long long>(r.peak_device_reserved_bytes),
              static_cast<long long>(r.plan_peak_device_bytes), static_cast<long long>(r.plan_device_high_water),
              static_cast<long long>(r.device_capacity));
  std::printf("peak host bytes:   %lld pinned + %lld pageable measured; the plan's: %lld\n",
              static_cast<long long>(r.peak_pinned_bytes), static_cast<long long>(r.peak_pageable_bytes),
              static_cast<long long>(r.peak_host_bytes));
  if (!out_path.empty()) std::cout << "report:       " << out_path << "\n";
  if (!trace_path.empty()) std::cout << "chrome trace: " << trace_path << "  (open in ui.perfetto.dev)\n";
  if (!o.checkpoint_dir.empty()) std::cout << "checkpoint:   " << o.checkpoint_dir << "/checkpoint.bin\n";
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("train", "replay a plan for real (LibTorch, emulated device) and train", protwin::cli::run_train)
