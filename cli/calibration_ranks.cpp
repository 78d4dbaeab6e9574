#include "cli/calibration_ranks.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

#include "sim/calib/calibration.h"
#include "cli/policy_options.h"
#include "sim/calib/rank_cases.h"
#include "sim/calib/rank_machine.h"
#include "cli/rank_runs.h"
#include "cli/rank_single_copy.h"
#include "sim/calib/rank_step_speeds.h"
#include "cli/runtime_process.h"
#include "sim/calib/speed_scaled_prediction.h"
#include "sim/engine/contention.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"
#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/op_profile.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::cli {
using namespace calib;  // calibration's statistics and fitting (sim/calib/)
namespace {

// mpirun on PATH, or "".
std::string find_mpirun() {
  const ProcessResult p = run_process("/bin/sh", {"-c", "command -v mpirun"});
  return p.exit_code == 0 ? p.out.substr(0, p.out.find('\n')) : "";
}

const char* verdict(bool ok) { return ok ? "met" : "NOT met"; }

// "iteration MAPE 3.1% (<= 5%: met), max 8.0% (<= 10%: met), Spearman 0.943 (>= 0.9: met)": a metrics
// section's iteration-time criteria.
std::string time_criteria(const nlohmann::json& m) {
  const double mape = m["iteration_time_mape"].get<double>(), max = m["iteration_time_max_error"].get<double>();
  const double spearman = m["spearman"].get<double>();
  return format("iteration MAPE %.1f%% (<= 5%%: %s), max %.1f%% (<= 10%%: %s), Spearman %.3f (>= 0.9: %s)",
                100 * mape, verdict(mape <= 0.05), 100 * max, verdict(max <= 0.10), spearman, verdict(spearman >= 0.9));
}

}  // namespace

nlohmann::json calibrate_rank_cases(const sim::Workload& w, const hw::Machine& machine, const CostFactory& cost_of,
                                    const RankCalibrationOptions& o) {
  nlohmann::json section = {{"ranks", o.ranks}, {"net_GBps", o.net_gbps}, {"steps", o.steps}};
  const std::string mpirun = find_mpirun();
  if (mpirun.empty()) {
    section["error"] = "mpirun not found on PATH (Debian: openmpi-bin)";
    return section;
  }
  // Single-copy transfers where the host permits them (containers that forbid ptrace do not): a
  // rank's collective is then a few handshakes and its thread backs off while it waits, instead of
  // waking every 20 us beside the rank's compute (cli/rank_single_copy.h). A caller's setting wins.
  const bool single_copy = single_copy_permitted();
  if (!single_copy) ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  section["single_copy_permitted"] = single_copy;
  const hw::Machine m = machine_for_ranks(machine, o.ranks, o.net_gbps);
  const std::unique_ptr<hw::HardwareCostModel> cost = cost_of(m);
  std::vector<std::string> mpirun_head;
  if (::geteuid() == 0) mpirun_head.push_back("--allow-run-as-root");
  mpirun_head.insert(mpirun_head.end(), {"--oversubscribe", "-np", std::to_string(o.ranks)});

  // 1. Each system's searched plan (with the calibration's one-rank profile).
  struct Case {
    std::string system, dir;
    nlohmann::json json;
    sim::offload::SearchResult search;
  };
  std::vector<Case> found;
  nlohmann::json cases = nlohmann::json::array();
  for (const std::string& system : sim::offload::system_names()) {
    const std::string dir = o.out_dir + "/ranks-" + system;
    traces::create_folders(dir, "-o");
    nlohmann::json c = {{"system", system}, {"plan", dir + "/plan.json"}};
    sim::offload::SearchOptions so;
    so.system = system;
    so.gpus = o.ranks;
    so.batch = w.options.batch;
    so.seq = w.options.seq;
    so.dtype = "fp32";
    so.flash_attention = false;
    so.threads = o.threads;
    sim::offload::SearchResult sr = sim::offload::search_policy(w.model, *cost, so);
    if (!sr.found) {
      // A system that keeps every model state on each device (DDP) has no plan under a cap meant
      // to make plans offload: it is searched without one (the plan's pool says so) and measured
      // all the same, so every system's 2-GPU plan is checked.
      sr = sim::offload::search_policy(w.model, *cost_of(with_capacity(m, kUncappedDeviceBytes)), so);
      c["device_capacity"] = "uncapped: no plan of " + system + " fits the calibration's device";
    }
    if (!sr.found) {
      c["error"] = "no plan of " + system + " fits";
      cases.push_back(c);
      continue;
    }
    traces::write_plan(sr.best_plan.plan, dir + "/plan.json");
    found.push_back({system, dir, c, std::move(sr)});
  }

  // 2. The prediction's profile: a rank's share of the machine. The plans' kernels are timed by
  // all N ranks at once (mpirun -np N protwin-rt profile), so each op is measured with the cores,
  // memory bandwidth and copy workers a rank has while N ranks run (on this 2-core machine: one
  // core each, and the other rank busy), not those of one process alone. Rank 0's files are used.
  std::unique_ptr<hw::HardwareCostModel> rank_cost;
  std::vector<sim::ContentionRule> contention;
  std::unique_ptr<traces::OpProfile> rank_profile;  // kept for the per-rank speed-scaled predictions
  std::unique_ptr<hw::Machine> rank_machine;
  if (o.profile_ranks && !found.empty()) {
    const std::string dir = o.out_dir + "/ranks-profile";
    traces::create_folders(dir, "-o");
    std::string cmd = "'" + o.runtime + "' profile --only-plans --rounds 1 --link-GBps " + std::to_string(o.link_gbps) +
                      " --net-GBps " + std::to_string(o.net_gbps) + " -o \"" + dir + "/machine-rank$OMPI_COMM_WORLD_RANK.json\" --profile-out \"" + dir +
                      "/profile-rank$OMPI_COMM_WORLD_RANK.json\" --json";  // each rank its own files
    for (const Case& c : found) cmd += " --plan '" + c.dir + "/plan.json'";
    std::vector<std::string> args = mpirun_head;
    args.insert(args.end(), {"/bin/sh", "-c", cmd});
    const ProcessResult p = run_process(mpirun, args, dir + "/runtime.log");
    PROTWIN_CHECK(p.exit_code == 0, "calibrate --ranks: mpirun protwin-rt profile failed (exit ", p.exit_code, "); see ",
                  dir, "/runtime.log");
    rank_profile = std::make_unique<traces::OpProfile>(traces::OpProfile::load(dir + "/profile-rank0.json"));
    const traces::OpProfile& profile = *rank_profile;
    nlohmann::json j = host_from_rank_share(hw::load_machine(dir + "/machine-rank0.json").json, o.ranks);
    for (const char* k : {"memory_bytes", "usable_memory_bytes"}) j["gpu"][k] = machine.json["gpu"][k];
    const hw::Machine pm = machine_for_ranks(hw::machine_from_json(j, dir + "/machine-rank0.json"), o.ranks, o.net_gbps);
    rank_machine = std::make_unique<hw::Machine>(pm);
    rank_cost = std::make_unique<hw::HardwareCostModel>(
        pm, [profile](const traces::OpSignature& sig) { return profile.lookup(sig); });
    contention = hw::contention_rules_from_profile(profile.provenance());
    section["profile"] = dir + "/profile-rank0.json";
  }

  // 3. Every plan on N ranks, `rounds` times, plan after plan (forwards, then backwards, as the
  // one-rank interleave): the plans' steps then sample the same stretches of the machine's load.
  // Each run's first step is warm-up. The rank reports and measured.json are the last round's.
  std::vector<std::vector<nlohmann::json>> runs(found.size());
  std::vector<BlockProbes> rank_blocks;  // per rank, every run's blocks beside its steps
  std::vector<std::vector<std::vector<double>>> run_levels(found.size());  // [plan][run]: summed_level
  std::vector<std::string> failed(found.size());
  // One round: every plan once, forwards in even rounds and backwards in odd ones.
  auto measure_round = [&](int round) {
    for (size_t n = 0; n < found.size(); ++n) {
      const size_t i = round % 2 == 0 ? n : found.size() - 1 - n;
      if (!failed[i].empty()) continue;
      const std::string& dir = found[i].dir;
      std::vector<std::string> args = mpirun_head;
      // --block-probes: every rank times each block of the plan once after every step; with the rank
      // profile, each rank's prediction prices the blocks at its medians and the step is the slowest
      // rank's (sim/calib/block_probes.h).
      args.insert(args.end(), {o.runtime, "train", "--plan", dir + "/plan.json", "--steps", std::to_string(o.steps),
                               "--link-GBps", std::to_string(o.link_gbps), "--net-GBps", std::to_string(o.net_gbps),
                               "-o", dir + "/measured.json", "--rank-reports", dir + "/ranks", "--probes", "--json",
                               "--block-probes"});
      const ProcessResult p = run_process(mpirun, args, dir + "/runtime.log");
      if (p.exit_code != 0) {
        failed[i] = "mpirun protwin-rt train exit " + std::to_string(p.exit_code) + " (see " + dir + "/runtime.log)";
        continue;
      }
      const std::string run_path = dir + "/train-r" + std::to_string(round) + ".json";
      traces::write_file_atomic(run_path, p.out);
      runs[i].push_back(nlohmann::json::parse(p.out));
      const size_t first = rank_blocks.empty() ? 0 : rank_blocks[0].level_us.size();
      add_rank_block_probes(rank_blocks, runs[i].back(), run_path);
      run_levels[i].push_back(summed_level(rank_blocks, first));  // this run's samples
    }
  };
  // The rounds: at least `rounds`, then more while a time criterion is undecided (its interval
  // straddles the target) and another round fits in budget_s (as the one-rank calibrate, issue 22).
  const auto t_start = std::chrono::steady_clock::now();
  int done_rounds = 0;
  for (; done_rounds < std::max(1, o.rounds); ++done_rounds) measure_round(done_rounds);

  // 3b. --rank-interleave: every plan that ran in one launch, step by step (sim/calib/rank_step_speeds.h).
  nlohmann::json interleaved;
  std::vector<int> interleave_index(found.size(), -1);  // a plan's index in the launch
  if (o.interleave_steps > 0) {
    const std::string dir = o.out_dir + "/ranks-interleave";
    traces::create_folders(dir, "-o");
    std::vector<std::string> args = mpirun_head;
    args.insert(args.end(), {o.runtime, "interleave", "--steps", std::to_string(o.interleave_steps), "--link-GBps",
                             std::to_string(o.link_gbps), "--net-GBps", std::to_string(o.net_gbps), "--json"});
    int n = 0;
    for (size_t i = 0; i < found.size(); ++i)
      if (failed[i].empty()) {
        args.insert(args.end(), {"--plan", found[i].dir + "/plan.json"});
        interleave_index[i] = n++;
      }
    if (n > 0) {
      const ProcessResult p = run_process(mpirun, args, dir + "/runtime.log");
      if (p.exit_code != 0)
        section["interleave_error"] = "mpirun protwin-rt interleave exit " + std::to_string(p.exit_code) + " (see " +
                                      dir + "/runtime.log)";
      else {
        interleaved = nlohmann::json::parse(p.out);
        traces::write_file_atomic(dir + "/interleave.json", interleaved.dump(1) + "\n");
      }
    }
  }
  // [plan][step][rank]: each rank's speeds of each step; and of the whole launch (the median of all
  // its probes: the interleaving gives every plan the same stretches of load, and one probe of
  // ~20 ms catches whichever scheduler slices it gets).
  std::vector<std::vector<std::vector<ResourceScales>>> interleave_scales, launch_scales;
  const traces::OpProfile* time_profile = rank_profile ? rank_profile.get() : o.one_rank_profile;
  if (!interleaved.is_null() && time_profile) {
    const ProbeSpeeds reference = probe_references(time_profile->provenance());
    if (reference.gemm_gflops > 0 && reference.copy_gbps > 0 && reference.adam_mparams_per_s > 0) {
      const std::vector<RankProbes> probes = rank_probes_of(interleaved);
      interleave_scales = rank_step_scales(probes, reference, 0);
      const size_t whole_launch = probes[0].gemm_before.size() * static_cast<size_t>(o.interleave_steps);
      launch_scales = rank_step_scales(probes, reference, whole_launch);
    }
  }

  // 4. The section judged on the runs so far (every added round judges it again; sim/calib/rank_cases.h).
  RankPredictors predictors;
  predictors.ranks = o.ranks;
  predictors.machine = &m;
  predictors.one_rank_profile = o.one_rank_profile;
  predictors.rank_profile = rank_profile.get();
  predictors.rank_machine = rank_machine.get();
  predictors.rank_cost = rank_cost.get();
  predictors.contention = contention;
  auto evaluate = [&]() {
    nlohmann::json s = section, judged = cases;
    std::vector<std::vector<std::vector<double>>> step_levels;  // each measured case's runs' block levels
    for (size_t fi = 0; fi < found.size(); ++fi) {
      const Case& fc = found[fi];
      const RankPlanPrediction predicted = predict_rank_plan(fc.search, predictors, rank_blocks);
      traces::write_report(predicted.report, fc.dir + "/simulated.json");
      nlohmann::json c = fc.json;  // judged anew after every round
      c.update(predicted.json);
      if (!failed[fi].empty()) {
        c["error"] = failed[fi];
        judged.push_back(c);
        continue;
      }
      RankCaseRuns measured;
      measured.runs = merge_runs(runs[fi]);
      measured.rank0 = traces::read_report(fc.dir + "/measured.json");
      std::vector<traces::Report> rank_reports;
      for (int r = 0; r < o.ranks; ++r)
        rank_reports.push_back(traces::read_report(fc.dir + "/ranks/rank" + std::to_string(r) + ".json"));
      measured.ranks_measured = rank_breakdown(rank_reports);
      if (!interleave_scales.empty() && interleave_index[fi] >= 0) {
        const size_t k = static_cast<size_t>(interleave_index[fi]);
        measured.interleaved_s = interleaved["plans"][k]["iteration_s"].get<std::vector<double>>();
        measured.step_scales = interleave_scales[k];
        measured.launch_scales = launch_scales[k];
      }
      c.update(compare_rank_case(fc.search, predicted.report, predictors, measured));
      c["rounds"] = runs[fi].size();
      step_levels.push_back(run_levels[fi]);
      judged.push_back(c);
    }
    s["cases"] = judged;
    s.update(rank_section_metrics(judged, step_levels, rank_blocks, rank_profile.get(), o.interleave_steps,
                                  o.bootstrap_resamples, o.bootstrap_seed));
    return s;
  };
  nlohmann::json judged = evaluate();
  for (;;) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (!rank_criteria_undecided(judged) || !another_round_fits(elapsed, elapsed / done_rounds, o.budget_s)) break;
    std::fprintf(stderr, "calibrate --ranks: after %d rounds a criterion is undecided; measuring another (%.0f of %.0f s)\n",
                 done_rounds, elapsed, o.budget_s);
    measure_round(done_rounds++);
    judged = evaluate();
  }
  judged["rounds"] = done_rounds;
  judged["budget_s"] = o.budget_s;
  return judged;
}

void print_rank_cases(const nlohmann::json& s) {
  const int ranks = s.at("ranks").get<int>();
  std::printf("\n%d-rank cases (mpirun -np %d, collectives capped at %g GB/s): each system's searched plan\n",
              ranks, ranks, s.at("net_GBps").get<double>());
  if (s.contains("error")) {
    std::printf("  not run: %s\n", s["error"].get<std::string>().c_str());
    return;
  }
  std::printf("%-13s %9s %9s %7s  %-44s %10s %10s %7s %8s\n", "system", "pred (s)", "meas (s)", "err",
              "busy error: compute h2d d2h collective cpu_optim", "pred GPU", "meas GPU", "err", "analytic");
  for (const auto& c : s.at("cases")) {
    const std::string sys = c.at("system");
    if (c.contains("error")) {
      std::printf("%-13s  %s\n", sys.c_str(), c["error"].get<std::string>().c_str());
      continue;
    }
    std::string busy;
    for (const char* st : kRankStreams)
      busy += c["busy"].contains(st) ? format(" %+.0f%%", 100 * c["busy"][st]["error"].get<double>()) : " -";
    const auto& g = c["memory"]["gpu"];
    std::printf("%-13s %9.3f %9.3f %+6.1f%%  %-44s %10s %10s %+6.1f%% %+7.1f%%\n", sys.c_str(),
                c["predicted_s"].get<double>(), c["measured_s"].get<double>(),
                100 * c["iteration_error"].get<double>(), busy.c_str(),
                human_bytes(g["predicted_bytes"].get<int64_t>()).c_str(),
                human_bytes(g["measured_bytes"].get<int64_t>()).c_str(), 100 * g["error"].get<double>(),
                100 * g["analytic_error"].get<double>());
  }
  for (const auto& c : s.at("cases"))
    if (c.contains("device_capacity"))
      std::printf("  %-13s %s\n", c["system"].get<std::string>().c_str(), c["device_capacity"].get<std::string>().c_str());
  std::printf("where each rank's measured last step went (s): busy compute / h2d / d2h / cpu_optim; collectives: "
              "wait for the peer + transfer\n");
  for (const auto& c : s.at("cases")) {
    if (c.contains("error") || !c.contains("ranks_measured")) continue;
    for (const auto& r : c["ranks_measured"]) {
      auto b = [&](const char* st) { return r["busy_s"].contains(st) ? r["busy_s"][st].get<double>() : 0.0; };
      std::printf("  %-13s rank %d: step %.3f  busy %.3f / %.3f / %.3f / %.3f  collectives %.3f + %.3f\n",
                  c["system"].get<std::string>().c_str(), r["rank"].get<int>(), r["iteration_s"].get<double>(),
                  b("compute"), b("h2d"), b("d2h"), b("cpu_optim"), r["collective_wait_s"].get<double>(),
                  r["collective_transfer_s"].get<double>());
    }
  }
  for (const auto& c : s.at("cases")) {
    if (!c.contains("at_rank_speeds")) continue;
    std::string per_rank;
    for (const auto& r : c["at_rank_speeds"]["ranks"])
      per_rank += format("  %.3f s (compute x%.2f copy x%.2f cpu x%.2f)", r["predicted_s"].get<double>(),
                         r["compute_scale"].get<double>(), r["copy_scale"].get<double>(), r["cpu_scale"].get<double>());
    std::printf("  %-13s at each rank's probed speed: slowest %.3f s (%+.1f%%); ranks:%s\n",
                c["system"].get<std::string>().c_str(), c["at_rank_speeds"]["predicted_s"].get<double>(),
                100 * c["at_rank_speeds"]["iteration_error"].get<double>(), per_rank.c_str());
  }
  for (const auto& c : s.at("cases")) {
    if (!c.contains("joint")) continue;
    std::string per_rank;
    for (const auto& r : c["joint"]["ranks"])
      per_rank += format("  rank %d %.3f s (compute %.3f, waits %.3f)", r["rank"].get<int>(),
                         r["predicted_s"].get<double>(), r["compute_busy_s"].get<double>(),
                         r["collective_wait_s"].get<double>());
    std::printf("  %-13s joint simulation (rendezvous, %d shared cores, a waiting rank %.2f of a core): %.3f s "
                "(%+.1f%%);%s\n",
                c["system"].get<std::string>().c_str(), c["joint"]["host_cores"].get<int>(),
                c["joint"]["wait_cpu_share"].get<double>(),
                c["joint"]["predicted_s"].get<double>(), 100 * c["joint"]["iteration_error"].get<double>(),
                per_rank.c_str());
  }
  for (const auto& c : s.at("cases")) {
    if (!c.contains("joint") || !c["joint"].contains("at_measured_compute")) continue;
    const auto& g = c["joint"]["at_measured_compute"];
    std::printf("  %-13s diagnostic, joint simulation at each rank's measured compute busy: %.3f s against the last "
                "step %.3f s (%+.1f%%)\n",
                c["system"].get<std::string>().c_str(), g["predicted_s"].get<double>(),
                g["measured_last_step_s"].get<double>(), 100 * g["error"].get<double>());
  }
  if (s.contains("metrics_joint_at_measured_compute")) {
    const auto& m = s["metrics_joint_at_measured_compute"];
    std::printf("diagnostic (not a prediction: each rank's compute from its measured step): MAPE %.1f%%, max %.1f%%\n",
                100 * m["iteration_time_mape"].get<double>(), 100 * m["iteration_time_max_error"].get<double>());
  }
  for (const auto& c : s.at("cases")) {
    if (!c.contains("interleaved")) continue;
    const auto& g = c["interleaved"];
    std::printf("  %-13s interleaved launch, joint simulation at both ranks' speeds of each step: %.3f s against "
                "%.3f s at the reference speeds (%+.1f%%; raw median %.3f s, predicted at the speeds then %.3f s)\n",
                c["system"].get<std::string>().c_str(), g["predicted_s"].get<double>(), g["measured_s"].get<double>(),
                100 * g["iteration_error"].get<double>(), g["raw_median_s"].get<double>(),
                g["predicted_then_median_s"].get<double>());
  }
  if (s.contains("interleave_error")) std::printf("  interleaved launch failed: %s\n", s["interleave_error"].get<std::string>().c_str());
  for (const auto& [key, what] : {std::pair<const char*, const char*>{"metrics_interleaved", "each step's probed speeds"},
                                  {"metrics_interleaved_launch_speeds", "each rank's speeds over the whole launch"}}) {
    if (s.contains(key))
      std::printf("%d-rank interleaved launch (%d steps per plan), joint simulation at %s: %s\n", ranks,
                  s[key]["steps"].get<int>(), what, time_criteria(s[key]).c_str());
  }
  for (const bool joint : {true, false}) {  // the joint simulation's targets are printed beside it
    const char* key = joint ? "metrics_joint" : "metrics_at_rank_speeds";
    if (!s.contains(key)) continue;
    const auto& m = s[key];
    std::printf("%d-rank %s: iteration MAPE %.1f%%%s, max %.1f%%%s, Spearman %.3f%s\n", ranks,
                joint ? "joint simulation" : "at each rank's probed speed (slowest rank)",
                100 * m["iteration_time_mape"].get<double>(), joint ? " (<= 5%)" : "",
                100 * m["iteration_time_max_error"].get<double>(), joint ? " (<= 10%)" : "", m["spearman"].get<double>(),
                joint ? " (>= 0.9)" : "");
  }
  if (s.contains("block_probes")) {
    const auto& b = s["block_probes"];
    std::printf("%d-rank block probes: %zu samples per rank, every rank's blocks summed after each step 80 %% within a "
                "%.0f %% band (in the intervals); each block beside the steps (median, p10-p90) against the rank "
                "profile:\n",
                ranks, b["samples"].get<size_t>(), 100 * b["level_us"]["p10_p90_relative"].get<double>());
    for (const auto& x : b["blocks"]) {
      const auto& sp = x["beside_steps_us"];
      std::printf("  rank %d %-60s %8.2f ms (%.2f-%.2f)", x["rank"].get<int>(), x["signature"].get<std::string>().c_str(),
                  sp["median"].get<double>() / 1e3, sp["p10"].get<double>() / 1e3, sp["p90"].get<double>() / 1e3);
      if (x.contains("profile_us")) std::printf(" against %.2f ms", x["profile_us"].get<double>() / 1e3);
      std::printf("\n");
    }
  }
  if (s.contains("metrics_profile_blocks")) {
    const auto& m = s["metrics_profile_blocks"];
    std::printf("%d-rank with the rank profile's blocks instead: iteration MAPE %.1f%%, max %.1f%%, Spearman %.3f\n",
                ranks, 100 * m["iteration_time_mape"].get<double>(), 100 * m["iteration_time_max_error"].get<double>(),
                m["spearman"].get<double>());
  }
  if (!s.contains("metrics")) return;
  const auto& m = s["metrics"];
  std::printf("%d-rank: %s; measured peak device vs simulator MAPE %.1f%%, max %.1f%% (<= 5%%: %s); ProTrain's "
              "analytic model MAPE %.1f%%; the plan's own bytes MAPE %.1f%%\n",
              ranks, time_criteria(m).c_str(), 100 * m["peak_device_mape"].get<double>(),
              100 * m["peak_device_max_error"].get<double>(), verdict(m["peak_device_max_error"].get<double>() <= 0.05),
              100 * m["analytic_peak_device_mape"].get<double>(), 100 * m["plan_peak_device_mape"].get<double>());
  if (!s.contains("intervals")) return;
  const auto& ci = s["intervals"];
  const auto& v = s["verdicts"];
  auto pct = [&](const char* k, int i) { return 100 * ci[k][i].get<double>(); };
  const bool sweeps = ci.value("resample", std::string()).rfind("sweeps", 0) == 0;
  std::printf("%d-rank criteria on 95 %% bootstrap intervals (%s%s): MAPE [%.1f, %.1f] (%s), max "
              "[%.1f, %.1f] (%s), Spearman [%.3f, %.3f] (%s), device peak (%s): %s\n",
              ranks, sweeps ? "whole sweeps resampled" : "steps within each plan",
              ci["block_level_samples"].get<size_t>() > 0 ? ", the blocks' level with them" : "",
              pct("iteration_time_mape", 0), pct("iteration_time_mape", 1), v["iteration_time_mape"].get<std::string>().c_str(),
              pct("iteration_time_max_error", 0), pct("iteration_time_max_error", 1),
              v["iteration_time_max_error"].get<std::string>().c_str(), ci["spearman"][0].get<double>(),
              ci["spearman"][1].get<double>(), v["spearman"].get<std::string>().c_str(),
              v["peak_device_max_error"].get<std::string>().c_str(),
              s["criteria_met"].get<bool>() ? "all met" : "NOT all met (calibrate exits 3)");
  if (s.contains("rounds"))
    std::printf("%d-rank rounds: %d (more while a criterion is undecided, up to --rank-budget-s %.0f)\n",
                ranks, s["rounds"].get<int>(), s.value("budget_s", 0.0));
}

}  // namespace protwin::cli
