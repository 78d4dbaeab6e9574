// protwin calibrate: close the loop (issue 7). Chooses diverse plans for a small model under a
// device-memory cap that forces offloading, runs them on the runtime (`protwin-rt interleave` as a
// child process, one per round: the plans step by step, round-robin, with a reference probe beside
// every step) with a profile of the plans' kernels before each round, simulates each with the
// pooled profile, and compares iteration time (each step expressed at the profile's speed, issue
// 22), per-stream busy time and memory peaks, with bootstrap intervals; rounds are added while an
// interval straddles its target, up to --budget-s. --fit corrects the profile's efficiency factors
// (one scale per stream) from half of the cases and reports the held-out half separately.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "sim/calib/block_probes.h"
#include "sim/calib/calibration.h"
#include "sim/calib/case_comparison.h"
#include "cli/calibration_ranks.h"
#include "sim/calib/rank_cases.h"
#include "sim/calib/drift_rule.h"
#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/runtime_process.h"
#include "sim/calib/sample_stats.h"
#include "sim/calib/speed_scaled_prediction.h"
#include "cli/subcommand.h"
#include "sim/engine/contention.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"
#include "traces/error.h"
#include "traces/json_reader.h"
#include "traces/file_io.h"
#include "traces/block_signature.h"
#include "traces/op_profile.h"
#include "traces/report.h"

namespace protwin::cli {
using namespace calib;  // calibration's statistics and fitting (sim/calib/)
namespace {

// The three reference probes beside every step: the GEMM's GFLOPS, the copy's GB/s, CPU Adam's
// M params/s, with their keys in protwin-rt interleave's JSON and in calibration.json.
enum ProbeKind { kGemm = 0, kCopy, kAdam, kProbeKinds };
struct ProbeKeys {
  const char* name;  // in the drift rule's lines
  const char* before;
  const char* after;
};
constexpr ProbeKeys kProbes[kProbeKinds] = {
    {"GEMM", "probe_before_gflops", "probe_after_gflops"},
    {"copy", "copy_probe_before_GBps", "copy_probe_after_GBps"},
    {"CPU Adam", "adam_probe_before_mparams_per_s", "adam_probe_after_mparams_per_s"}};

struct CaseResult : CaseOutcome {  // the predicted and measured sides (sim/calib/case_comparison.h)
  CalibrationCase c;
  std::string dir;
  std::vector<double> measured_steps;                        // every step of every round (raw)
  std::vector<double> round_s;                               // raw median of steps 2..N per round
  std::vector<double> raw_steps;                             // steps 2..N of every round, raw
  // Each probe (kProbes) around each timed step, and the machine's speed then (step_speeds).
  std::array<std::vector<double>, kProbeKinds> probe_before, probe_after, speed;
  std::vector<int> step_round;                               // the round of each timed step
  std::vector<double> predicted_then;                        // the plan simulated at each step's speeds
  std::vector<double> norm_steps;                            // raw_steps at the reference speeds
  traces::Plan plan;                                         // the simulated plan
  double raw_s = 0;                                          // median of raw_steps
  traces::Report sim_report;
  std::string measured_report;
  std::string error;                                         // runtime failure, if any
  double block_sensitivity = 0;           // d ln predicted / d ln the blocks' time
};

// The cases as the library's comparison sees them.
std::vector<const CaseOutcome*> outcomes(const std::vector<const CaseResult*>& cs) { return {cs.begin(), cs.end()}; }

// plots/calibration.py in the working folder or above the executable (build/<dir>/cli/protwin).
std::string find_plot_script() {
  const std::string rel_path = "plots/calibration.py";
  if (::access(rel_path.c_str(), R_OK) == 0) return rel_path;
  std::string dir = runtime_binary_path();
  for (int up = 0; up < 5 && !dir.empty(); ++up) {
    dir = dir.substr(0, dir.rfind('/'));
    if (::access((dir + "/" + rel_path).c_str(), R_OK) == 0) return dir + "/" + rel_path;
  }
  return "";
}

// The 95 % intervals of the iteration-time metrics, by name.
nlohmann::json interval_json(const MetricsWithIntervals& m) {
  return {{"level", 0.95},
          {"iteration_time_mape", m.interval[kMape].to_json()},
          {"iteration_time_max_error", m.interval[kMaxError].to_json()},
          {"spearman", m.interval[kSpearman].to_json()},
          {"best_predicted_measured_gap", m.interval[kBestGap].to_json()}};
}

int run_calibrate(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string model_name = "gpt2-tiny", machine_name = "host-emulated", profile_name = "host-emulated", out_dir = "out/calibration";
  int cases = 12, steps = 4, threads = 2, rounds = 3, bootstrap_resamples = 2000;
  RankCalibrationOptions ro;  // --ranks and the flags of its cases (cli/calibration_ranks.h)
  uint64_t bootstrap_seed = 1;
  double budget_s = 600;
  int64_t batch = 4, seq = 0;
  double link = 0.25, device_mb = 0;
  desc.add_options()
      ("model", po::value(&model_name)->default_value(model_name), "zoo name, spec file or inline spec (gpt2 or llama family)")
      ("cases", po::value(&cases)->default_value(cases), "number of plans to compare")
      ("batch", po::value(&batch)->default_value(batch), "micro-batch")
      ("seq", po::value(&seq)->default_value(0), "sequence length (0: the model's default)")
      ("steps", po::value(&steps)->default_value(steps), "runtime steps per plan and round (the first is warm-up)")
      ("rounds", po::value(&rounds)->default_value(rounds),
       "rounds at least; each runs every plan, interleaved step by step with a reference probe")
      ("budget-s", po::value(&budget_s)->default_value(budget_s),
       "keep adding rounds while a criterion's interval straddles its target, up to this many seconds in all")
      ("bootstrap", po::value(&bootstrap_resamples)->default_value(bootstrap_resamples),
       "bootstrap resamples of the steps for the 95 % intervals")
      ("seed", po::value(&bootstrap_seed)->default_value(bootstrap_seed), "seed of the bootstrap")
      ("link-GBps", po::value(&link)->default_value(link), "copy-worker throttle of the runtime (and the model's link rate)")
      ("device-memory-MB", po::value(&device_mb)->default_value(0),
       "emulated device capacity (0: 60% of the all-resident plan's peak, so every plan offloads)")
      ("machine", po::value(&machine_name)->default_value(machine_name),
       "the profiled machine (name or file): chooses the plans; predicts them with --no-reprofile")
      ("profile", po::value(&profile_name)->default_value(profile_name),
       "op profile: shipped name, file, or 'none' (curves only)")
      ("no-reprofile", "predict with --machine and --profile as given; by default the selected plans' kernels are "
                       "profiled before each of the first --rounds rounds (`protwin profile --only-plans`) and the "
                       "rounds' timings pooled, so the profile and the runs see the same machine; the rounds added "
                       "while a criterion is undecided only measure")
      ("no-contention", "predict without the profile's measured contention (compute beside copies and CPU Adam)")
      ("fit", "fit one scale per stream on half of the cases; report the held-out half")
      ("ranks", po::value(&ro.ranks)->default_value(0),
       "also run every system's plan for this many GPUs under mpirun -np (0: none; cli/calibration_ranks.h)")
      ("net-GBps", po::value(&ro.net_gbps)->default_value(1), "collective bandwidth cap of the --ranks cases")
      ("no-rank-profile", "predict the --ranks cases with the one-rank profile instead of one the ranks take together")
      ("rank-rounds", po::value(&ro.rounds)->default_value(ro.rounds),
       "runs of every --ranks plan at least, one plan after another (its steps sample the same stretches of load)")
      ("rank-budget-s", po::value(&ro.budget_s)->default_value(300),
       "keep adding --ranks rounds while a criterion's interval straddles its target, up to this many seconds of "
       "--ranks runs in all")
      ("rank-interleave", po::value(&ro.interleave_steps)->default_value(0),
       "also run every --ranks plan in ONE mpirun launch, step by step, this many steps each (0: off), and predict "
       "each step at both ranks' probed speeds then (sim/calib/rank_step_speeds.h)")
      ("threads", po::value(&threads)->default_value(threads), "threads for the search")
      ("output,o", po::value(&out_dir)->default_value(out_dir)->value_name("DIR"),
       "folder for plans, reports, calibration.json and the plot (created, with its parents)")
      ("no-plot", "do not draw the plot (plots/calibration.py, found in the working folder or above protwin)")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("protwin calibrate [--model gpt2-tiny] [--cases 12] [--link-GBps X] [--device-memory-MB M] "
                     "[--fit] [--json]", desc, args, vm))
    return 0;
  PROTWIN_CHECK(cases >= 2, "--cases: expected at least 2, got ", cases);
  PROTWIN_CHECK(steps >= 2, "--steps: expected at least 2 (the first is warm-up), got ", steps);
  PROTWIN_CHECK(rounds >= 1, "--rounds: expected at least 1, got ", rounds);
  PROTWIN_CHECK(budget_s >= 0, "--budget-s: expected a number >= 0, got ", budget_s);
  PROTWIN_CHECK(bootstrap_resamples >= 100, "--bootstrap: expected at least 100 resamples, got ", bootstrap_resamples);
  PROTWIN_CHECK(link > 0, "--link-GBps: expected a number > 0, got ", link);
  PROTWIN_CHECK(ro.ranks == 0 || (ro.ranks >= 2 && ro.ranks <= 64), "--ranks: expected 0 or 2 to 64, got ",
                ro.ranks);
  PROTWIN_CHECK(ro.rounds >= 1 && ro.rounds <= 100, "--rank-rounds: expected 1 to 100, got ", ro.rounds);
  PROTWIN_CHECK(ro.budget_s >= 0, "--rank-budget-s: expected a number >= 0, got ", ro.budget_s);
  PROTWIN_CHECK(ro.interleave_steps == 0 || (ro.interleave_steps >= 2 && ro.interleave_steps <= 1000),
                "--rank-interleave: expected 0 (off) or 2 to 1000 steps, got ", ro.interleave_steps);
  PROTWIN_CHECK(ro.net_gbps >= 0.01 && ro.net_gbps <= 10000, "--net-GBps: expected 0.01 to 10000, got ",
                ro.net_gbps);
  const std::string rt = runtime_binary_path();
  PROTWIN_CHECK(!rt.empty(), "calibrate needs the LibTorch runtime (protwin-rt next to protwin), which was not built");
  const bool json_out = vm.count("json") > 0;
  const auto t_start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& s) { if (!json_out) std::cerr << s << "\n"; };

  // Model, workload (fp32, eager attention: what the runtime runs).
  sim::WorkloadOptions wo;
  wo.batch = batch;
  wo.seq = seq;
  wo.dtype = "fp32";
  wo.flash_attention = false;
  const sim::Workload w = sim::build_workload(sim::resolve_model(model_name), wo);

  // Profile and machine.
  std::optional<traces::OpProfile> profile;
  if (auto p = hw::load_op_profile(profile_name)) profile = *p;
  hw::Machine machine = hw::load_machine(machine_name);

  // The profile's measured slowdowns of ops that share the emulated device's cores.
  auto contention = [&]() {
    return profile && !vm.count("no-contention") ? hw::contention_rules_from_profile(profile->provenance())
                                                 : std::vector<sim::ContentionRule>{};
  };
  // The capacity: the all-resident (DDP) plan's peak decides the default.
  int64_t capacity = static_cast<int64_t>(device_mb * 1024 * 1024);
  if (capacity == 0) {
    const auto cost = hw::make_cost_model(with_capacity(machine, kUncappedDeviceBytes), profile ? &*profile : nullptr);
    const sim::offload::Candidate c = sim::offload::evaluate(w, *cost, 1, sim::offload::base_knobs("ddp"));
    PROTWIN_CHECK(c.simulated, "calibrate: the all-resident plan of ", w.model.name, " does not simulate: ", c.failure);
    capacity = static_cast<int64_t>(0.6 * static_cast<double>(c.peak_gpu_bytes));
  }
  machine = with_link(with_capacity(machine, capacity), profile ? &*profile : nullptr, link);
  const auto cost = hw::make_cost_model(machine, profile ? &*profile : nullptr);
  traces::create_folders(out_dir, "-o");  // after every input is known good

  // 1. Cases.
  say("selecting plans (" + w.model.name + ", batch " + std::to_string(batch) + ", device " +
      std::to_string(capacity / (1024 * 1024)) + " MiB)...");
  CaseSelection sel = select_cases(w, *cost, cases, threads);
  PROTWIN_CHECK(sel.cases.size() >= 2, "calibrate: only ", sel.cases.size(), " plan(s) fit under --device-memory-MB ",
                capacity / (1024.0 * 1024), "; hint: raise it");
  std::vector<CaseResult> results;
  for (size_t i = 0; i < sel.cases.size(); ++i) {
    CaseResult r;
    r.c = sel.cases[i];
    r.dir = out_dir + format("/case-%02zu", i);
    traces::create_folders(r.dir, "-o");
    const SimulatedCase s = simulate_case(w, *cost, r.c.knobs);
    traces::write_plan(s.plan.plan, r.dir + "/plan.json");
    results.push_back(std::move(r));
  }

  // 2. Unless --no-reprofile, the plans' kernels are profiled before each of the first --rounds
  // rounds (interleaved with the runs, so a shared machine's drift reaches both sides alike) and the
  // rounds' timings are pooled. The rounds added while a criterion is undecided only measure: the
  // prediction is already pooled from --rounds profiles, every step is expressed at their
  // reference speeds by its own probes, and a round without its ~20 s profile gives twice the
  // steps per second of budget to the intervals that are still undecided.
  // Each profile also records the reference probe's speed while it ran (reference_probe).
  const bool reprofile = vm.count("no-reprofile") == 0;
  std::array<std::vector<double>, kProbeKinds> profile_levels;  // each profile's reference speed of each probe
  auto add_references = [&](const traces::OpProfile& p) {
    const ProbeSpeeds ref = probe_references(p.provenance());
    const double speeds[kProbeKinds] = {ref.gemm_gflops, ref.copy_gbps, ref.adam_mparams_per_s};
    for (size_t k = 0; k < kProbeKinds; ++k)
      if (speeds[k] > 0) profile_levels[k].push_back(speeds[k]);
  };
  if (!reprofile && profile) add_references(*profile);
  std::vector<traces::OpProfile> round_profiles;  // each round's own, for the blocks' medians
  auto profile_round = [&](int round) {
    const std::string tag = "-r" + std::to_string(round);
    std::vector<std::string> a = {"profile", "--only-plans", "--rounds", "1", "-o", out_dir + "/machine" + tag + ".json",
                                  "--profile-out", out_dir + "/profile" + tag + ".json", "--link-GBps",
                                  std::to_string(link), "--json"};
    for (const auto& r : results) a.insert(a.end(), {"--plan", r.dir + "/plan.json"});
    const ProcessResult p = run_process(rt, a, out_dir + "/runtime.log");
    PROTWIN_CHECK(p.exit_code == 0, "calibrate: protwin-rt profile failed (exit ", p.exit_code, "); see ", out_dir,
                  "/runtime.log");
    const traces::OpProfile got = traces::OpProfile::load(out_dir + "/profile" + tag + ".json");
    add_references(got);
    round_profiles.push_back(got);
    if (round == 0) {
      profile = got;
      machine = with_link(with_capacity(hw::load_machine(out_dir + "/machine" + tag + ".json"), capacity),
                          profile ? &*profile : nullptr, link);
    } else {
      profile->merge(got);
      profile = traces::with_block_medians(*profile, round_profiles);
    }
  };

  // 3. Every round runs all cases in one `protwin-rt interleave`: step by step, round-robin over the
  // plans, with the reference probe (a fixed GEMM) timed before every step and after the last, so
  // each step can be expressed at the profile's speed (issue 22). Drift then reaches every plan
  // alike instead of one plan's rounds.
  // The machine's own noise, sampled before the first round and after every round: the same GEMM's
  // speed (protwin bench stability).
  std::vector<double> noise_samples;
  std::array<std::vector<double>, kProbeKinds> step_probes;  // each probe before every step
  BlockProbes block_probes;  // every round's blocks timed beside the steps
  auto sample_noise = [&] {
    const ProcessResult p = run_process(rt, {"bench", "stability", "--seconds", "2", "--json"}, out_dir + "/noise.log");
    if (p.exit_code != 0) return;
    const nlohmann::json j = nlohmann::json::parse(p.out);  // kept alive: the loop walks into it
    for (double g : j.at("samples_gflops")) noise_samples.push_back(g);
  };
  auto measure_round = [&](int round) {
    std::vector<std::string> a = {"interleave", "--steps", std::to_string(steps), "--link-GBps", std::to_string(link),
                                  "--json"};
    if (reprofile) a.push_back("--block-probes");  // the blocks' times beside the steps (sim/calib/block_probes.h)
    // Each round starts the plans at another one: a plan's place in the process moves its time.
    const std::vector<size_t> order = round_plan_order(results.size(), round);
    for (size_t i : order)
      a.insert(a.end(), {"--plan", results[i].dir + "/plan.json", "-o",
                         results[i].dir + "/measured-r" + std::to_string(round) + ".json"});
    const ProcessResult p = run_process(rt, a, out_dir + "/runtime.log");
    if (p.exit_code != 0) {
      for (auto& r : results)
        if (r.raw_steps.empty())
          r.error = "protwin-rt interleave exit " + std::to_string(p.exit_code) + " (see " + out_dir + "/runtime.log)";
      return;
    }
    const std::string interleave_path = out_dir + "/interleave-r" + std::to_string(round) + ".json";
    traces::write_file_atomic(interleave_path, p.out);
    const nlohmann::json j = nlohmann::json::parse(p.out);
    add_block_probes(block_probes, j, interleave_path);
    // Each probe's speed around every step, in the round's run order: [position][step], as
    // step_speeds expects (results[order[position]] is the case).
    auto probes = [&](const char* key) {
      std::vector<std::vector<double>> v;
      for (const auto& jp : j.at("plans")) v.push_back(jp.at(key).get<std::vector<double>>());
      return v;
    };
    std::array<std::vector<std::vector<double>>, kProbeKinds> before, after, speed;
    // Each step at the speed of its own probes, as issue 22 prescribes. A window of one sweep over all
    // plans (tried first) scored worse on the loaded machine: 58.6 % MAPE against 23.2 % raw and 22.5 %
    // with the step's own probes (docs/BENCHMARKS.md, issue 22).
    for (size_t p = 0; p < kProbeKinds; ++p) {
      before[p] = probes(kProbes[p].before);
      after[p] = probes(kProbes[p].after);
      speed[p] = step_speeds(before[p], after[p], 0);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      CaseResult& r = results[order[i]];  // the case run at position i
      const nlohmann::json& jp = j.at("plans").at(i);
      const auto it = jp.at("iteration_s").get<std::vector<double>>();
      r.measured_steps.insert(r.measured_steps.end(), it.begin(), it.end());
      r.round_s.push_back(quantile(std::vector<double>(it.begin() + 1, it.end()), 0.5));
      for (size_t s = 1; s < it.size(); ++s) {  // the first step of a round is warm-up
        r.raw_steps.push_back(it[s]);
        for (size_t p = 0; p < kProbeKinds; ++p) {
          r.probe_before[p].push_back(before[p][i][s]);
          r.probe_after[p].push_back(after[p][i][s]);
          r.speed[p].push_back(speed[p][i][s]);
          step_probes[p].push_back(before[p][i][s]);
        }
        r.step_round.push_back(round);
      }
      r.error.clear();  // a failed round is not fatal
      r.measured_report = r.dir + "/measured-r" + std::to_string(round) + ".json";
      const traces::Report m = traces::read_report(r.measured_report);
      r.meas_busy.clear();
      for (const char* st : kCaseStreams)
        if (const auto* x = m.stream(st)) r.meas_busy[st] = x->busy.seconds();
      for (const char* pl : kCasePools)
        if (const auto* x = m.pool(pl)) r.meas_peak[pl] = x->peak.n;
      r.meas_peak["gpu_plan"] = r.meas_peak["gpu"];  // the ledger: the plan's bytes at the real times
      r.meas_peak["gpu"] = jp.at("peak_device_bytes").get<int64_t>();  // the caching allocator's high water
    }
  };

  // 4. The predictions (from the pooled profile alone; the measurements do not enter) and the
  // measured side at the profile's speed: each case's median step, with bootstrap intervals.
  ProbeSpeeds reference;
  std::string reference_source;
  std::optional<traces::OpProfile> profile_blocks;  // the pooled profile with the profiles' block medians
  auto predict = [&] {
    // The rounds' contention medians and the blocks beside the steps (sim/calib/case_comparison.h).
    if (reprofile) profile = pooled_profile(*profile, round_profiles, block_probes, &profile_blocks.emplace());
    std::vector<sim::offload::OffloadKnobs> knobs;
    for (const auto& r : results) knobs.push_back(r.c.knobs);
    const bool sampled_blocks = reprofile && !block_probes.us.empty();
    std::vector<CasePrediction> predicted = predict_cases(w, machine, profile ? &*profile : nullptr,
                                                          sampled_blocks ? &*profile_blocks : nullptr, knobs, contention());
    for (size_t i = 0; i < results.size(); ++i) {
      CaseResult& r = results[i];
      CasePrediction& p = predicted[i];
      r.kernels_predicted_s = p.kernels_predicted_s;
      r.block_sensitivity = p.block_sensitivity;
      r.profile_blocks_predicted_s = p.profile_blocks_predicted_s;
      r.predicted_s = p.sim.iteration_s;
      r.pred_busy = p.sim.busy;
      r.pred_peak = p.sim.peak;
      r.sim_report = std::move(p.sim.report);
      r.plan = std::move(p.sim.plan.plan);
    }
  };
  // Which probe changes are corrected for (sim/calib/drift_rule.h): per probe, drift between steps and a
  // level shift from the profiles, each only when its test detects it; otherwise the steps keep
  // their raw speed for that probe.
  std::array<ProbeCorrection, kProbeKinds> fix;
  auto normalise = [&] {
    // The profile's reference speed, for the record; a profile from before the copy and CPU Adam
    // probes has only the GEMM's (the steps' median stands in: no level shift can be tested).
    auto ref_of = [&](size_t p) {
      const std::vector<double>& prof = profile_levels[p];
      reference_source += std::string(reference_source.empty() ? "" : "; ") + kProbes[p].name +
                          (prof.empty() ? ": median probe of the measured steps (not in the profile)"
                                        : ": median reference probe of the profile(s)");
      return prof.empty() ? quantile(step_probes[p], 0.5) : quantile(prof, 0.5);
    };
    reference_source.clear();
    reference = {ref_of(kGemm), ref_of(kCopy), ref_of(kAdam)};  // in this order in reference_source
    if (std::all_of(results.begin(), results.end(), [](const CaseResult& r) { return r.raw_steps.empty(); })) return;
    // Every measured step of every plan, for each probe's tests.
    for (size_t p = 0; p < kProbeKinds; ++p) {
      std::vector<double> b, a, sp;
      std::vector<int> round;
      for (const auto& r : results) {
        b.insert(b.end(), r.probe_before[p].begin(), r.probe_before[p].end());
        a.insert(a.end(), r.probe_after[p].begin(), r.probe_after[p].end());
        sp.insert(sp.end(), r.speed[p].begin(), r.speed[p].end());
        round.insert(round.end(), r.step_round.begin(), r.step_round.end());
      }
      fix[p] = correct_probes(profile_levels[p], b, a, sp, round);
    }
    const ProbeSpeeds used{fix[kGemm].reference, fix[kCopy].reference, fix[kAdam].reference};
    // Each step's plan re-simulated with every resource at its speed then: the step at the
    // reference speeds = raw x predicted(reference) / predicted(then) (sim/calib/speed_scaled_prediction.h).
    size_t k = 0;  // the step's index in the corrections (results in order, steps in order)
    for (auto& r : results) {
      r.norm_steps.clear();
      r.predicted_then.clear();
      if (r.raw_steps.empty()) continue;
      SpeedScaledPredictor predictor(r.plan, machine, profile ? &*profile : nullptr, contention());
      const double at_reference = predictor.iteration_s({});
      for (size_t s = 0; s < r.raw_steps.size(); ++s, ++k) {
        const ResourceScales sc = scales_of({fix[kGemm].then[k], fix[kCopy].then[k], fix[kAdam].then[k]}, used);
        r.predicted_then.push_back(predictor.iteration_s(sc));
        r.norm_steps.push_back(at_reference_speeds(r.raw_steps[s], at_reference, r.predicted_then.back()));
      }
      r.raw_s = quantile(r.raw_steps, 0.5);
      r.measured_s = quantile(r.norm_steps, 0.5);
    }
  };
  std::vector<const CaseResult*> ok;
  MetricsWithIntervals norm_ci, raw_ci;
  std::vector<Verdict> verdicts;
  bool paired = false;  // the intervals resample whole sweeps (sim/calib/calibration.h)
  auto evaluate = [&] {
    predict();
    normalise();
    ok.clear();
    for (const auto& r : results)
      if (r.error.empty() && !r.raw_steps.empty()) ok.push_back(&r);
    PROTWIN_CHECK(ok.size() >= 2, "calibrate: fewer than 2 plans ran on the runtime; see ", out_dir, "/runtime.log");
    std::vector<double> pred, sensitivity;
    Groups norm, raw;
    for (const auto* c : ok) {
      pred.push_back(c->predicted_s);
      sensitivity.push_back(c->block_sensitivity);
      norm.push_back(c->norm_steps);
      raw.push_back(c->raw_steps);
    }
    // The intervals carry the blocks' level too (one sample per step) when the prediction takes
    // its blocks from the steps' block probes. The steps are resampled by sweep (every plan's step
    // of a sweep and the blocks after them together) when they pair up, as they do when every plan
    // ran in every round.
    const std::vector<double> level = reprofile ? block_probes.level_us : std::vector<double>{};
    const std::vector<std::vector<double>> sweeps =
        reprofile ? block_probes.sweep_level_us : std::vector<std::vector<double>>{};
    paired = std::all_of(norm.begin(), norm.end(), [&](const auto& s) { return s.size() == norm[0].size(); }) &&
             (sweeps.empty() ? level.empty() : sweeps.size() == norm[0].size());
    auto intervals = [&](const Groups& steps_of) {
      return paired ? sweep_paired_metrics_with_intervals(pred, sensitivity, sweeps, steps_of, bootstrap_resamples,
                                                          bootstrap_seed)
                    : iteration_metrics_with_intervals(pred, sensitivity, level, steps_of, bootstrap_resamples,
                                                       bootstrap_seed);
    };
    norm_ci = intervals(norm);
    raw_ci = intervals(raw);
    verdicts = {judge_at_most(norm_ci.interval[kMape], 0.05), judge_at_most(norm_ci.interval[kMaxError], 0.10),
                judge_at_least(norm_ci.interval[kSpearman], 0.9), judge_at_most(norm_ci.interval[kBestGap], 0.05)};
  };

  // The rounds: at least --rounds, then more while a criterion is undecided (its interval
  // straddles the target) and another round fits in --budget-s.
  Progress bar("calibrating", rounds);
  sample_noise();
  int done_rounds = 0;
  double last_measure_s = 0;  // the last round's measuring part: what an added round repeats
  for (;;) {
    if (reprofile && done_rounds < rounds) profile_round(done_rounds);
    const auto t0 = std::chrono::steady_clock::now();
    measure_round(done_rounds);
    sample_noise();
    ++done_rounds;
    last_measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bar.tick();
    if (done_rounds < rounds) continue;
    evaluate();
    if (std::count(verdicts.begin(), verdicts.end(), Verdict::kUndecided) == 0) break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (!another_round_fits(elapsed, last_measure_s, budget_s)) {
      say("budget of " + std::to_string(static_cast<int>(budget_s)) + " s spent: a criterion is still undecided");
      break;
    }
    say(format("round %d: an interval straddles its target (MAPE %.1f-%.1f %%, max %.1f-%.1f %%, Spearman "
               "%.2f-%.2f, best gap %.1f-%.1f %%); measuring another round (%.0f of %.0f s)",
               done_rounds, 100 * norm_ci.interval[kMape].lo, 100 * norm_ci.interval[kMape].hi,
               100 * norm_ci.interval[kMaxError].lo, 100 * norm_ci.interval[kMaxError].hi,
               norm_ci.interval[kSpearman].lo, norm_ci.interval[kSpearman].hi, 100 * norm_ci.interval[kBestGap].lo,
               100 * norm_ci.interval[kBestGap].hi, elapsed, budget_s));
  }
  bar.done();
  const Spread noise = spread_of(noise_samples);
  const Spread probe_spread = spread_of(step_probes[kGemm]);
  if (reprofile) profile->save(out_dir + "/profile.json");
  for (const auto& r : results) traces::write_report(r.sim_report, r.dir + "/simulated.json");
  const CaseMetrics all = case_metrics(outcomes(ok));
  // The same measurement against another prediction (issue 22's A/Bs).
  const CaseMetrics kernels_metrics = case_metrics(outcomes(ok), &CaseOutcome::kernels_predicted_s);
  const CaseMetrics profile_blocks_metrics = case_metrics(outcomes(ok), &CaseOutcome::profile_blocks_predicted_s);
  // Each block's runs beside the steps against its profiles' times.
  nlohmann::json blocks_json = nlohmann::json::array();
  for (const auto& [key, us] : block_probes.us) {
    std::vector<double> profiled;
    for (const traces::OpProfile& rp : round_profiles)
      for (const traces::OpProfileEntry& e : rp.entries())
        if (e.sig.key() == key) profiled.push_back(e.us.mean);
    const Spread sp = spread_of(us);
    blocks_json.push_back({{"signature", key}, {"beside_steps_us", sp.to_json()}, {"profiles_us", profiled}});
  }

  // 5. --fit: per-stream scales from the even cases, evaluated on the odd ones.
  nlohmann::json fit_json;
  if (vm.count("fit")) {
    std::vector<const CaseResult*> train, test;
    for (size_t i = 0; i < ok.size(); ++i) (i % 2 == 0 ? train : test).push_back(ok[i]);
    std::map<std::string, double> scale = fit_stream_scales(outcomes(train));
    const hw::Machine fm = scaled_machine(machine, scale);
    const auto fcost = hw::make_cost_model(fm, profile ? &*profile : nullptr, scale["compute"]);
    fcost->set_contention(contention());
    for (auto& r : results)
      if (r.error.empty()) r.fitted_predicted_s = simulate_case(w, *fcost, r.c.knobs).iteration_s;
    fit_json = {{"scales", scale},
                {"train_cases", train.size()},
                {"held_out_cases", test.size()},
                {"train", case_metrics(outcomes(train), &CaseOutcome::fitted_predicted_s).to_json()},
                {"held_out", case_metrics(outcomes(test), &CaseOutcome::fitted_predicted_s).to_json()},
                {"held_out_before_fit", case_metrics(outcomes(test)).to_json()}};
    traces::write_file_atomic(out_dir + "/machine-fitted.json", fm.json.dump(2) + "\n");
  }

  // 5b. --ranks: every system's N-GPU plan under mpirun.
  nlohmann::json rank_section;
  if (ro.ranks > 1) {
    say("running every system's " + std::to_string(ro.ranks) + "-GPU plan under mpirun...");
    ro.steps = steps;
    ro.link_gbps = link;
    ro.out_dir = out_dir;
    ro.runtime = rt;
    ro.threads = threads;
    ro.profile_ranks = !vm.count("no-rank-profile");
    ro.one_rank_profile = profile ? &*profile : nullptr;
    ro.bootstrap_resamples = bootstrap_resamples;
    ro.bootstrap_seed = bootstrap_seed;
    rank_section = calibrate_rank_cases(
        w, machine, [&](const hw::Machine& m) { return hw::make_cost_model(m, profile ? &*profile : nullptr); }, ro);
  }

  // 6. JSON, plot, table.
  nlohmann::json jc = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json c = {{"plan", r.dir + "/plan.json"},
                        {"label", r.c.label},
                        {"system", r.c.system},
                        {"knobs", r.c.knobs.to_json()},
                        {"simulated_report", r.dir + "/simulated.json"},
                        {"measured_report", r.measured_report},
                        {"predicted_s", r.predicted_s},
                        {"predicted_busy_s", r.pred_busy},
                        {"predicted_peak_bytes", r.pred_peak},
                        {"predicted_peak_device_bytes", r.pred_peak.count("gpu") ? r.pred_peak.at("gpu") : 0}};
    if (!r.error.empty()) {
      c["error"] = r.error;
    } else {
      c.update({{"measured_s", r.measured_s},
                {"measured_raw_s", r.raw_s},
                {"raw_iteration_error", relative_error(r.predicted_s, r.raw_s)},
                {"measured_steps_s", r.measured_steps},
                {"timed_steps_raw_s", r.raw_steps},
                {"timed_steps_at_reference_s", r.norm_steps},
                {"speed_gflops", r.speed[kGemm]},
                {"predicted_at_step_speeds_s", r.predicted_then},
                {"measured_rounds_s", r.round_s},
                {"measured_busy_s", r.meas_busy},
                {"measured_peak_bytes", r.meas_peak},
                {"measured_peak_device_bytes", r.meas_peak.at("gpu")},
                {"iteration_error", relative_error(r.predicted_s, r.measured_s)},
                {"off", diagnosis(r, 0.10)}});
      for (size_t p = 0; p < kProbeKinds; ++p)
        c.update({{kProbes[p].before, r.probe_before[p]}, {kProbes[p].after, r.probe_after[p]}});
      if (!fit_json.is_null()) c["fitted_predicted_s"] = r.fitted_predicted_s;
      c["kernels_predicted_s"] = r.kernels_predicted_s;
      c["profile_blocks_predicted_s"] = r.profile_blocks_predicted_s;
      c["block_sensitivity"] = r.block_sensitivity;
      c["kernels_iteration_error"] = relative_error(r.kernels_predicted_s, r.measured_s);
    }
    jc.push_back(c);
  }
  nlohmann::json out = all.to_json();
  out.update({{"model", w.model.name},
              {"batch", batch},
              {"seq", w.options.seq},
              {"link_GBps", link},
              {"device_capacity_bytes", capacity},
              {"machine", machine.source},
              {"profile", profile ? (reprofile ? out_dir + "/profile.json" : profile_name) : "none"},
              {"steps", steps},
              {"rounds", rounds},
              {"rounds_done", done_rounds},
              {"budget_s", budget_s},
              {"measured", "per case the median of steps 2..N of every round, each at the reference speeds: raw x "
                           "predicted at the reference / predicted with compute, copy and CPU Adam rates scaled by "
                           "their probes' speeds around that step (sim/calib/speed_scaled_prediction.h), each probe's "
                           "change corrected only where drift_rule detects it (sim/calib/drift_rule.h)"},
              {"drift_rule", {{"alpha", kDriftAlpha},
                              {"what", "per probe: drift between steps (ANOVA, each step's before/after pair a "
                                       "group) and a level shift between the profiles and the rounds (pooled t-test "
                                       "on log medians); a change is corrected only when detected"},
                              {"gemm", fix[kGemm].to_json()},
                              {"copy", fix[kCopy].to_json()},
                              {"adam", fix[kAdam].to_json()}}},
              {"reference_gflops", reference.gemm_gflops},
              {"reference_copy_GBps", reference.copy_gbps},
              {"reference_adam_mparams_per_s", reference.adam_mparams_per_s},
              {"reference_source", reference_source},
              {"step_probe_gflops", probe_spread.to_json()},
              {"step_copy_probe_GBps", spread_of(step_probes[kCopy]).to_json()},
              {"step_adam_probe_mparams_per_s", spread_of(step_probes[kAdam]).to_json()},
              {"intervals", interval_json(norm_ci)},
              {"intervals_resample", paired ? "sweeps (every plan's step of a sweep and the blocks' level after them together)"
                                            : "steps within each plan (the blocks' level as one more group)"},
              {"verdicts", {{"iteration_time_mape", verdict_text(verdicts[0])},
                            {"iteration_time_max_error", verdict_text(verdicts[1])},
                            {"spearman", verdict_text(verdicts[2])},
                            {"best_predicted_measured_gap", verdict_text(verdicts[3])}}},
              {"criteria_met", std::count(verdicts.begin(), verdicts.end(), Verdict::kMet) == 4},
              {"raw", {{"iteration_time_mape", raw_ci.point[kMape]},
                       {"iteration_time_max_error", raw_ci.point[kMaxError]},
                       {"spearman", raw_ci.point[kSpearman]},
                       {"best_predicted_measured_gap", raw_ci.point[kBestGap]},
                       {"intervals", interval_json(raw_ci)}}},
              {"kernels_alone", {{"what", "the same measurement, predicted without the profile's whole blocks "
                                          "(every block the sum of its kernels, as before issue 22)"},
                                 {"iteration_time_mape", kernels_metrics.mape},
                                 {"iteration_time_max_error", kernels_metrics.max_error},
                                 {"iteration_time_mean_error", kernels_metrics.mean_error}}},
              {"profile_blocks", {{"what", "the same measurement, predicted with each block at the median of the "
                                           "profiles' times (as before session 15) instead of its runs beside the steps"},
                                  {"iteration_time_mape", profile_blocks_metrics.mape},
                                  {"iteration_time_max_error", profile_blocks_metrics.max_error},
                                  {"iteration_time_mean_error", profile_blocks_metrics.mean_error}}},
              {"block_probes", {{"what", "every block the plans run, one run after every step (protwin interleave "
                                         "--block-probes); the prediction takes each at its median and the intervals "
                                         "resample the blocks' summed time after each step with the steps"},
                                {"samples", block_probes.level_us.size()},
                                {"level_us", spread_of(block_probes.level_us).to_json()},
                                {"blocks", blocks_json}}},
              {"cases", jc},
              {"skipped", sel.skipped},
              {"timeline_case", 0},
              {"machine_noise_gflops", noise.to_json()},
              {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()}});
  if (!fit_json.is_null()) out["fit"] = fit_json;
  if (!rank_section.is_null()) out["rank_cases"] = rank_section;
  const std::string json_path = out_dir + "/calibration.json";
  traces::write_file_atomic(json_path, out.dump(2) + "\n");

  if (!vm.count("no-plot")) {
    const std::string script = find_plot_script();
    if (!script.empty()) {
      const ProcessResult p = run_process("/usr/bin/python3", {script, json_path, "-o", out_dir + "/calibration.png"},
                                          out_dir + "/plot.log");
      if (p.exit_code != 0) say("plot failed (see " + out_dir + "/plot.log)");
      else out["plot"] = out_dir + "/calibration.png";
    }
  }

  // A missed --ranks criterion is an exit code of its own (README: exit codes).
  const int exit_code = rank_section.is_null() || rank_criteria_met(rank_section) ? 0 : kRankCriteriaMissedExit;
  if (json_out) {
    print_json(out);
    return exit_code;
  }
  std::printf("%s, batch %lld x seq %lld, device %.1f MiB, link %g GB/s; measured: %d round(s) of %d steps per plan, "
              "interleaved step by step; per plan the median of steps 2..%d of every round, at the reference speeds "
              "(GEMM %.0f GFLOPS; %s; raw: as timed)\n",
              w.model.name.c_str(), static_cast<long long>(batch), static_cast<long long>(w.options.seq),
              static_cast<double>(capacity) / (1024 * 1024), link, done_rounds, steps, steps, reference.gemm_gflops,
              reference_source.c_str());
  std::printf("\n%-3s %-34s %9s %9s %7s %9s %7s %10s %10s %6s  %s\n", "#", "plan", "pred (s)", "meas (s)", "err",
              "raw (s)", "raw err", "pred GPU", "meas GPU", "err", "off by > 10%");
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.error.empty()) {
      std::printf("%-3zu %-34s %9.3f %9s  %s\n", i, r.c.label.c_str(), r.predicted_s, "-", r.error.c_str());
      continue;
    }
    const double pg = static_cast<double>(r.pred_peak.count("gpu") ? r.pred_peak.at("gpu") : 0);
    const double mg = static_cast<double>(r.meas_peak.at("gpu"));
    std::printf("%-3zu %-34s %9.3f %9.3f %+6.1f%% %9.3f %+6.1f%% %10s %10s %+5.1f%%  %s\n", i,
                traces::utf8_prefix(r.c.label, 34).c_str(), r.predicted_s, r.measured_s,
                100 * relative_error(r.predicted_s, r.measured_s), r.raw_s, 100 * relative_error(r.predicted_s, r.raw_s),
                human_bytes(static_cast<int64_t>(pg)).c_str(), human_bytes(static_cast<int64_t>(mg)).c_str(),
                100 * relative_error(pg, mg), diagnosis(r, 0.10).c_str());
  }
  const auto& ci = norm_ci.interval;
  std::printf("\nat the reference speed, with 95 %% bootstrap intervals (%s%s, %d resamples); a criterion is met "
              "when its whole interval is:\n",
              paired ? "whole sweeps resampled: every plan's step of a sweep together" : "steps resampled within each plan",
              block_probes.level_us.empty() ? "" : (paired ? ", with the blocks' level after them" : ", the blocks' level over the steps"),
              bootstrap_resamples);
  std::printf("iteration time  MAPE %.1f%% [%.1f, %.1f] (target <= 5%%: %s), max error %.1f%% [%.1f, %.1f] "
              "(<= 10%%: %s); mean signed error %+.1f%%\n",
              100 * all.mape, 100 * ci[kMape].lo, 100 * ci[kMape].hi, verdict_text(verdicts[0]), 100 * all.max_error,
              100 * ci[kMaxError].lo, 100 * ci[kMaxError].hi, verdict_text(verdicts[1]), 100 * all.mean_error);
  std::printf("ranking         Spearman %.3f [%.3f, %.3f] (>= 0.9: %s); best predicted %s best measured, %.1f%% "
              "[%.1f, %.1f] slower than it (<= 5%%: %s)\n",
              all.spearman, ci[kSpearman].lo, ci[kSpearman].hi, verdict_text(verdicts[2]),
              all.best_is_best ? "is the" : "is not the", 100 * all.best_gap, 100 * ci[kBestGap].lo,
              100 * ci[kBestGap].hi, verdict_text(verdicts[3]));
  std::printf("raw (as timed)  MAPE %.1f%% [%.1f, %.1f], max error %.1f%% [%.1f, %.1f], Spearman %.3f [%.3f, %.3f], "
              "best plan %.1f%% slower\n",
              100 * raw_ci.point[kMape], 100 * raw_ci.interval[kMape].lo, 100 * raw_ci.interval[kMape].hi,
              100 * raw_ci.point[kMaxError], 100 * raw_ci.interval[kMaxError].lo, 100 * raw_ci.interval[kMaxError].hi,
              raw_ci.point[kSpearman], raw_ci.interval[kSpearman].lo, raw_ci.interval[kSpearman].hi,
              100 * raw_ci.point[kBestGap]);
  std::printf("kernels alone   MAPE %.1f%%, max error %.1f%%, mean signed error %+.1f%% (the same measurement, "
              "predicted without the profile's whole blocks: every block the sum of its kernels)\n",
              100 * kernels_metrics.mape, 100 * kernels_metrics.max_error, 100 * kernels_metrics.mean_error);
  if (!block_probes.level_us.empty()) {
    std::printf("profile blocks  MAPE %.1f%%, max error %.1f%%, mean signed error %+.1f%% (the same measurement, "
                "predicted with each block at its profiles' median instead of its runs beside the steps)\n",
                100 * profile_blocks_metrics.mape, 100 * profile_blocks_metrics.max_error, 100 * profile_blocks_metrics.mean_error);
    const Spread lv = spread_of(block_probes.level_us);
    std::printf("block probes    %zu steps, the blocks' summed time after each 80 %% within a %.0f %% band (in the intervals); "
                "each block beside the steps (median, p10-p90) against the profiles:\n",
                lv.n, 100 * lv.relative);
    for (const auto& b : blocks_json) {
      std::string prof;
      for (double x : b["profiles_us"]) prof += format("%s%.2f", prof.empty() ? "" : " / ", x / 1e3);
      const auto& sp = b["beside_steps_us"];
      std::printf("                %-60s %8.2f ms (%.2f-%.2f) against %s ms\n", b["signature"].get<std::string>().c_str(),
                  sp["median"].get<double>() / 1e3, sp["p10"].get<double>() / 1e3, sp["p90"].get<double>() / 1e3,
                  prof.c_str());
    }
  }
  if (std::count(verdicts.begin(), verdicts.end(), Verdict::kUndecided) > 0)
    std::printf("undecided       an interval still straddles its target after %d rounds (--budget-s %.0f): the "
                "machine's noise is wider than the target resolves\n", done_rounds, budget_s);
  if (probe_spread.n > 0)
    std::printf("reference probe beside every step (%zu samples): median %.0f GFLOPS, 80 %% within a %.0f %% band "
                "(p10 %.0f, p90 %.0f); reference %.0f GFLOPS\n",
                probe_spread.n, probe_spread.median, 100 * probe_spread.relative, probe_spread.p10, probe_spread.p90,
                reference.gemm_gflops);
  for (size_t p = 0; p < kProbeKinds; ++p)
    std::printf("drift rule      %s probe: between steps F %.2f (p %.3f), level vs profile %+.1f %% (t %.2f, p %.3f): "
                "correction %s\n",
                kProbes[p].name, fix[p].between_steps.statistic, fix[p].between_steps.p_value,
                100 * fix[p].level.effect, fix[p].level.statistic, fix[p].level.p_value,
                fix[p].to_json()["corrected"].get<std::string>().c_str());
  for (const auto& [name, unit, samples, ref] :
       {std::make_tuple("copy probe", "GB/s", &step_probes[kCopy], reference.copy_gbps),
        std::make_tuple("CPU Adam probe", "M params/s", &step_probes[kAdam], reference.adam_mparams_per_s)}) {
    const Spread sp = spread_of(*samples);
    if (sp.n > 0)
      std::printf("%s beside every step: median %.3g %s, 80 %% within a %.0f %% band (p10 %.3g, p90 %.3g); "
                  "reference %.3g\n", name, sp.median, unit, 100 * sp.relative, sp.p10, sp.p90, ref);
  }
  std::printf("peak device     MAPE %.1f%% (<= 3%%: %s); peak host (pinned + pageable) MAPE %.1f%%\n",
              100 * all.peak_mape, all.peak_mape <= 0.03 ? "met" : "NOT met", 100 * all.host_peak_mape);
  std::printf("                (measured: the caching allocator's high water; predicted: the runtime's tensors "
              "replayed in the simulated schedule; the plan's own bytes: MAPE %.1f%%)\n",
              100 * plan_bytes_mape(outcomes(ok)));
  if (!fit_json.is_null()) {
    const auto& h = fit_json["held_out"];
    const auto& hb = fit_json["held_out_before_fit"];
    std::printf("fit (even cases): scales compute %.3f h2d %.3f d2h %.3f cpu_optim %.3f\n",
                fit_json["scales"]["compute"].get<double>(), fit_json["scales"]["h2d"].get<double>(),
                fit_json["scales"]["d2h"].get<double>(), fit_json["scales"]["cpu_optim"].get<double>());
    std::printf("held-out (odd cases, %zu): MAPE %.1f%% -> %.1f%%, max error %.1f%% -> %.1f%%, Spearman %.3f -> %.3f\n",
                fit_json["held_out_cases"].get<size_t>(), 100 * hb["iteration_time_mape"].get<double>(),
                100 * h["iteration_time_mape"].get<double>(), 100 * hb["iteration_time_max_error"].get<double>(),
                100 * h["iteration_time_max_error"].get<double>(), hb["spearman"].get<double>(), h["spearman"].get<double>());
  }
  if (noise.n > 0)
    std::printf("machine noise   a fixed GEMM between rounds (%zu samples): median %.0f GFLOPS, 80 %% within a "
                "%.0f %% band (p10 %.0f, p90 %.0f)%s\n",
                noise.n, noise.median, 100 * noise.relative, noise.p10, noise.p90,
                noise.relative > 0.10 ? "; noisier than the 5 % target resolves: rerun on a quieter machine" : "");
  for (const auto& s : sel.skipped) std::printf("skipped: %s\n", s.c_str());
  if (!rank_section.is_null()) print_rank_cases(rank_section);
  std::printf("results: %s%s\n", json_path.c_str(), out.contains("plot") ? ("  plot: " + out["plot"].get<std::string>()).c_str() : "");
  return exit_code;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("calibrate", "simulate and run diverse offloading plans on the runtime; compare the twin with reality",
                   protwin::cli::run_calibrate)
