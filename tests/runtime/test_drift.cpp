// Drift-robust measurement (issue 22), a test of the method rather than of the machine: a
// synthetic speed drift on the emulated device (runtime/memory/speed_throttle.h), compute and
// copies slowed by different factors that change between steps, must cancel once every step is
// expressed at the reference speeds (each resource scaled by its own probe, through the simulator:
// sim/calib/speed_scaled_prediction.h), while the raw times carry it. Oracle: the same plans measured
// without the drift in the same stretch of time (a plan and its drifted copy: ratio 1).
#include "tests/runtime/torch_catch.h"

#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "sim/calib/calibration.h"
#include "sim/calib/drift_rule.h"
#include "sim/calib/sample_stats.h"
#include "sim/calib/speed_scaled_prediction.h"
#include "runtime/profile/host_measurements.h"
#include "runtime/profile/profile_shapes.h"
#include "runtime/profile/block_profile.h"
#include "runtime/profile/profiler.h"
#include "runtime/profile/runtime_overhead.h"
#include "runtime/executor/runtime_plan.h"
#include "runtime/memory/speed_throttle.h"
#include "runtime/train/interleaved.h"
#include "tests/runtime/plan_fixtures.h"
#include "traces/file_io.h"
#include "traces/report.h"

namespace protwin::rt {
namespace {

using testing::compile_plan;
using testing::resident_plan;
using testing::tiny_workload;

TEST_CASE("compute and copies drifting by different factors cancel at the reference speeds, not in raw times") {
  const sim::Workload w = testing::eager_workload("gpt2-tiny", 4, 64);
  sim::offload::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 2;
  k.n_checkpoint = 1;
  const traces::Plan resident_p = resident_plan(w), offloaded_p = compile_plan(w, k);
  const RuntimePlan resident = make_runtime_plan(resident_p, "resident.json");
  const RuntimePlan offloaded = make_runtime_plan(compile_plan(w, k), "offloaded.json");
  constexpr double kLink = 0.25;  // calibrate's default: the copies are a real part of the step

  // This machine profiled now, as calibrate does before its rounds: the plans' kernels, the copy
  // engine, CPU Adam, their contention, and the three reference probes.
  ProfileOptions po;
  po.link_gbps = kLink;
  po.rounds = 1;
  po.signatures = plan_signatures(resident_p);
  merge_signatures(po.signatures, plan_signatures(offloaded_p));
  merge_signatures(po.signatures, backward_signatures(po.signatures));
  merge_signatures(po.signatures, plan_block_signatures(resident_p));  // whole blocks, as calibrate profiles
  merge_signatures(po.signatures, plan_block_signatures(offloaded_p));
  // The runtime's own work per step, timed on a real step of the resident plan as calibrate's
  // profile times it on its first plan.
  const std::filesystem::path step_plan =
      std::filesystem::temp_directory_path() / ("protwin_drift_plan_" + std::to_string(::getpid()) + ".json");
  traces::write_plan(resident_p, step_plan.string());
  po.step_plan = step_plan.string();
  const ProfileResult prof = run_profile(po);
  std::filesystem::remove(step_plan);
  const hw::Machine machine = hw::machine_from_json(machine_json(prof.host), "profiled by the test");
  const calib::ProbeSpeeds reference = calib::probe_references(prof.profile.provenance());
  REQUIRE(reference.gemm_gflops > 0);
  REQUIRE(reference.copy_gbps > 0);
  REQUIRE(reference.adam_mparams_per_s > 0);

  // Each plan followed by a copy of itself on a drifted device: compute 1.8x slower, the link 2.5x
  // slower; the next plan runs at full speed again. The host keeps its speed, as a host does while
  // its GPU throttles: CPU Adam, the CPU probe and the runtime's own work per op and per step (its
  // stream threads, outside the ops; priced as host dispatch from the profile) are not stretched,
  // so the prediction scales that work by the CPU probe (1 here), not by the GEMM's. A faster
  // machine makes that fixed work a larger share of the step (on one CI machine the step grew
  // only 1.76x under the 1.8x compute drift): scaling the whole step by the GEMM probe would then
  // over-correct, pricing it separately does not, whatever its share.
  // Round-robin in alternating direction keeps a plan and its copy next to each other in time
  // (0 1 2 3, 3 2 1 0, ...), so the machine's own noise reaches both alike.
  const std::vector<RuntimePlan> plans = {resident, resident, offloaded, offloaded};
  const std::vector<const traces::Plan*> sim_plans = {&resident_p, &resident_p, &offloaded_p, &offloaded_p};
  InterleaveOptions o;
  o.steps = 13;  // 12 measured ratios per plan: the median's 95 % interval is ranks 3 and 10
  o.link_gbps = kLink;
  o.before_step = [n = static_cast<int64_t>(plans.size())](int64_t i) {
    const int64_t step = i / n, pos = i % n;
    const int64_t plan = step % 2 == 0 ? pos : n - 1 - pos;  // run_interleaved's order
    set_emulated_slowdown(plan % 2 == 1 ? 1.8 : 1.0);
    set_emulated_copy_slowdown(plan % 2 == 1 ? 2.5 : 1.0);
  };
  const InterleavedResult r = run_interleaved(plans, o);
  set_emulated_slowdown(1);
  set_emulated_copy_slowdown(1);

  // Every step judged by its own probes (window 0), as `protwin calibrate` does, each probe's
  // change corrected where the drift rule detects it (sim/calib/drift_rule.h) over the timed steps (the
  // first is warm-up) of every plan.
  std::vector<std::vector<double>> gemm_b, gemm_a, copy_b, copy_a, adam_b, adam_a;
  for (const InterleavedPlan& p : r.plans) {
    gemm_b.push_back(p.probe_before), gemm_a.push_back(p.probe_after);
    copy_b.push_back(p.copy_probe_before), copy_a.push_back(p.copy_probe_after);
    adam_b.push_back(p.adam_probe_before), adam_a.push_back(p.adam_probe_after);
  }
  auto corrected = [&](const std::vector<std::vector<double>>& b, const std::vector<std::vector<double>>& a,
                       double profile_level) {
    const auto own = calib::step_speeds(b, a, 0);
    std::vector<double> fb, fa, fo;
    for (size_t i = 0; i < b.size(); ++i)
      for (size_t s = 1; s < b[i].size(); ++s) fb.push_back(b[i][s]), fa.push_back(a[i][s]), fo.push_back(own[i][s]);
    return calib::correct_probes({profile_level}, fb, fa, fo, std::vector<int>(fb.size(), 0));
  };
  const calib::ProbeCorrection gemm = corrected(gemm_b, gemm_a, reference.gemm_gflops),
                             copy = corrected(copy_b, copy_a, reference.copy_gbps),
                             adam = corrected(adam_b, adam_a, reference.adam_mparams_per_s);
  const calib::ProbeSpeeds used{gemm.reference, copy.reference, adam.reference};
  const size_t timed = static_cast<size_t>(o.steps) - 1;
  const auto gemm_own = calib::step_speeds(gemm_b, gemm_a, 0);
  const auto contention = hw::contention_rules_from_profile(prof.profile.provenance());
  auto normalised = [&](size_t i, size_t s, calib::SpeedScaledPredictor& pred) {
    const size_t k = i * timed + s - 1;  // the step's index in the corrections
    const calib::ResourceScales sc = calib::scales_of({gemm.then[k], copy.then[k], adam.then[k]}, used);
    return calib::at_reference_speeds(r.plans[i].iteration_s[s], pred.iteration_s({}), pred.iteration_s(sc));
  };

  for (size_t b : {size_t{0}, size_t{2}}) {
    calib::SpeedScaledPredictor pred(*sim_plans[b], machine, &prof.profile, contention);
    std::vector<double> raw, norm, gemm_only;  // copy / original, step by step
    for (size_t s = 1; s < static_cast<size_t>(o.steps); ++s) {
      raw.push_back(r.plans[b + 1].iteration_s[s] / r.plans[b].iteration_s[s]);
      norm.push_back(normalised(b + 1, s, pred) / normalised(b, s, pred));
      gemm_only.push_back(calib::at_reference_speed(r.plans[b + 1].iteration_s[s], gemm_own[b + 1][s], 100) /
                          calib::at_reference_speed(r.plans[b].iteration_s[s], gemm_own[b][s], 100));
    }
    const double raw_ratio = calib::quantile(raw, 0.5), norm_ratio = calib::quantile(norm, 0.5),
                 gemm_ratio = calib::quantile(gemm_only, 0.5);
    // The machine's own noise: how far the original's GEMM probes spread (p10-p90 over the median).
    std::vector<double> own = gemm_b[b];
    own.insert(own.end(), gemm_a[b].begin(), gemm_a[b].end());
    const double band = (calib::quantile(own, 0.9) - calib::quantile(own, 0.1)) / calib::quantile(own, 0.5);
    INFO((b == 0 ? "resident" : "offloaded") << ": median copy/original raw " << raw_ratio
                                             << ", at the reference speeds " << norm_ratio
                                             << ", the whole step scaled by the GEMM probe " << gemm_ratio
                                             << "; the GEMM probe's p10-p90 band " << 100 * band << " %");
    // A machine so loaded that the GEMM probe's band exceeds 100 % (others' builds and timing runs
    // on the 2 cores; 240-505 % seen) can drown the injected drift itself: the test of the method
    // is then inconclusive, and says so.
    if (band > 1.0) {
      WARN("probe band " << 100 * band << " % > 100 %: the machine's own noise drowns the injected drift; "
           "raw " << raw_ratio << ", at the reference speeds " << norm_ratio << " (not checked)");
      continue;
    }
    CHECK(raw_ratio >= 1.3);                                      // the drift is in the raw times
    CHECK(gemm.between_steps.detected);                           // the rule sees the injected drift
    CHECK(copy.between_steps.detected);
    CHECK(std::abs(std::log(norm_ratio)) < std::log(raw_ratio));  // and smaller at the reference speeds
    // How close to 1 it comes is reported, not asserted: in two fresh-clone CI runs with a quiet
    // GEMM probe (bands under 10 %) the resident plan's normalised ratio was 0.937 (the probe read
    // the 1.8x drift as 1.88x) and 1.197 (the drifted step slowed 2.18x under a 1.8x stretch, more
    // than its probes: not understood; stretching by spinning on 2 cores beside LibTorch's own
    // threads is a suspect). A 5 % bound is a timing target, which belongs in a benchmark
    // (docs/RUNTIME.md, "The drift test"), not in a unit test; the two checks above held with wide
    // margins in every run seen.
    const auto [lo, hi] = calib::median_interval(norm);
    WARN((b == 0 ? "resident" : "offloaded") << ": at the reference speeds the median copy/original ratio is "
         << norm_ratio << ", its distribution-free 95 % interval [" << lo << ", " << hi << "] (target 1 +- 5 %; "
         "the GEMM probe's band " << 100 * band << " %)");
  }
}

TEST_CASE("the runtime's own cost per op and per step: a known delay in every op shows as that much per op") {
  // Oracle (closed form): every op of the measuring plans spins for exactly 20 us more, so the
  // per-op slope grows by 20 us and the per-step intercept stays (within scheduler noise).
  const RuntimeOverhead base = measure_runtime_overhead();
  RuntimeOverheadOptions o;
  o.op_body = [] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  const RuntimeOverhead delayed = measure_runtime_overhead(o);
  INFO("per op " << base.op_us << " us, with a 20 us body " << delayed.op_us << " us; per step " << base.step_us
                  << " us, with the body " << delayed.step_us << " us");
  CHECK(base.op_us >= 0);
  CHECK(base.op_us < 300);  // an empty op costs the runtime far less than a millisecond op
  CHECK(std::abs(delayed.op_us - base.op_us - 20) < 8);
  CHECK(std::abs(delayed.step_us - base.step_us) < 0.25 * 20 * o.short_ops + 200);
  RuntimeOverheadOptions bad;
  bad.long_ops = bad.short_ops;
  CHECK_THROWS_WITH(measure_runtime_overhead(bad), Catch::Contains("short_ops < long_ops"));
}

TEST_CASE("protwin interleave: every step's time and probes as JSON, exit 2 on bad input", "[runtime][cli]") {
  const std::string rt = std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt";
  if (!std::filesystem::exists(rt)) {
    WARN("SKIPPED: protwin-rt is not built");
    return;
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("protwin_interleave_" +
                                                                              std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  traces::write_plan(resident_plan(tiny_workload("gpt2-tiny")), d + "/plan.json");
  auto run = [&](const std::string& args, int& code) {
    const int status = std::system((rt + " " + args + " >" + d + "/out 2>" + d + "/err").c_str());
    code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  int code = -1;
  run("interleave --plan " + d + "/plan.json --plan " + d + "/plan.json --steps 2 --json -o " + d + "/a.json -o " + d +
          "/b.json",
      code);
  REQUIRE(code == 0);
  const nlohmann::json j = nlohmann::json::parse(traces::read_file(d + "/out"));
  REQUIRE(j["plans"].size() == 2);
  for (const auto& p : j["plans"]) {
    CHECK(p["iteration_s"].size() == 2);
    CHECK(p["probe_before_gflops"].size() == 2);
    CHECK(p["probe_after_gflops"].size() == 2);
    for (double g : p["probe_before_gflops"]) CHECK(g > 0);
    // The copy and CPU Adam probes beside the GEMM's: one 1 MiB copy unthrottled (no --link-GBps)
    // and one Adam pass, each a positive rate per step.
    for (const char* k : {"copy_probe_before_GBps", "copy_probe_after_GBps", "adam_probe_before_mparams_per_s",
                          "adam_probe_after_mparams_per_s"}) {
      REQUIRE(p[k].size() == 2);
      for (double x : p[k]) CHECK(x > 0);
    }
  }
  CHECK(traces::read_report(d + "/b.json").meta["source"] == "runtime");
  run("interleave --plan " + d + "/plan.json --plan " + d + "/plan.json -o " + d + "/a.json", code);
  CHECK(code == 2);
  CHECK(traces::read_file(d + "/err") == "protwin interleave: error: --output: expected one per --plan (2), got 1\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the emulated slowdown refuses factors below 1") {
  CHECK_THROWS_WITH(set_emulated_slowdown(0.5), Catch::Contains("expected a factor >= 1"));
  CHECK(emulated_slowdown() == 1.0);
}

}  // namespace
}  // namespace protwin::rt
