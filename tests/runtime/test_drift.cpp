// Drift-robust measurement (issue 22), a test of the method rather than of the machine: a
// synthetic speed drift on the emulated device (runtime/memory/speed_throttle.h) that changes
// between steps must cancel once every step is expressed at the reference speed, while the raw
// times carry it. Oracle: the same plans measured without the drift in the same stretch of time
// (a plan and its drifted copy: ratio 1).
#include "tests/runtime/torch_catch.h"

#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "cli/calibration.h"
#include "cli/sample_stats.h"
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

TEST_CASE("a device speed that drifts between steps cancels at the reference speed, not in raw times") {
  const sim::Workload w = tiny_workload("gpt2-tiny", 4, 64);
  sim::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 2;
  k.n_checkpoint = 1;
  const RuntimePlan resident = make_runtime_plan(resident_plan(w), "resident.json");
  const RuntimePlan offloaded = make_runtime_plan(compile_plan(w, k), "offloaded.json");
  // Each plan followed by a copy of itself that runs at 1.8x its time: the device slows down for
  // the copy's steps and speeds up again for the next plan's. Round-robin in alternating direction
  // keeps a plan and its copy next to each other in time (0 1 2 3, 3 2 1 0, ...), so the
  // machine's own noise reaches both alike.
  const std::vector<RuntimePlan> plans = {resident, resident, offloaded, offloaded};
  InterleaveOptions o;
  o.steps = 9;
  o.before_step = [n = static_cast<int64_t>(plans.size())](int64_t i) {
    const int64_t step = i / n, pos = i % n;
    const int64_t plan = step % 2 == 0 ? pos : n - 1 - pos;  // run_interleaved's order
    set_emulated_slowdown(plan % 2 == 1 ? 1.8 : 1.0);
  };
  const InterleavedResult r = run_interleaved(plans, o);
  set_emulated_slowdown(1);
  std::vector<std::vector<double>> before, after;
  for (const InterleavedPlan& p : r.plans) before.push_back(p.probe_before), after.push_back(p.probe_after);
  // Every step is judged by its own probes (window 0), as `protwin calibrate` does.
  const std::vector<std::vector<double>> speed = cli::step_speeds(before, after, 0);
  constexpr double kReference = 100;  // any: the ratios below do not depend on it

  for (size_t b : {size_t{0}, size_t{2}}) {
    std::vector<double> raw, norm;  // copy / original, step by step
    for (size_t s = 1; s < static_cast<size_t>(o.steps); ++s) {
      raw.push_back(r.plans[b + 1].iteration_s[s] / r.plans[b].iteration_s[s]);
      norm.push_back(cli::at_reference_speed(r.plans[b + 1].iteration_s[s], speed[b + 1][s], kReference) /
                     cli::at_reference_speed(r.plans[b].iteration_s[s], speed[b][s], kReference));
    }
    const double raw_ratio = cli::quantile(raw, 0.5), norm_ratio = cli::quantile(norm, 0.5);
    // The machine's own noise: how far the original's probes spread (p10-p90 over the median).
    std::vector<double> own = before[b];
    own.insert(own.end(), after[b].begin(), after[b].end());
    const double band = (cli::quantile(own, 0.9) - cli::quantile(own, 0.1)) / cli::quantile(own, 0.5);
    INFO((b == 0 ? "resident" : "offloaded") << ": median copy/original raw " << raw_ratio << ", at the reference speed "
                                             << norm_ratio << "; the probe's p10-p90 band " << 100 * band << " %");
    CHECK(raw_ratio >= 1.3);                                     // the drift is in the raw times
    CHECK(std::abs(std::log(norm_ratio)) < std::log(raw_ratio));  // and smaller at the reference speed
    // Where the probe resolves it (a band <= 10 %: not on a machine shared by many builds, where a
    // 20-ms probe catches whichever scheduler slices it gets), near 1: for the
    // resident plan, whose step is all device compute and so slows exactly as the GEMM probe does.
    // The offloaded plan's step also waits on the copy throttle, which the slowdown does not scale
    // in proportion; scaling the whole step by the GEMM probe leaves it off (1.14 on a quiet machine,
    // 2026-11-25), the open part of issue 22 (scale only the compute part; a copy probe).
    if (band > 0.10) WARN("probe band " << 100 * band << " % > 10 %: the 5 % check needs a quieter machine");
    // The normalised ratio cannot be surer than the probe that normalises it: within 5 % or the
    // probe's own p10-p90 band, whichever is wider (a quiet 2-core VM: 7 %, and 1.067 seen).
    else if (b == 0) CHECK(std::abs(norm_ratio - 1) <= std::max(0.05, band));
    else WARN("offloaded: at the reference speed " << norm_ratio << " (whole-step scaling; issue 22 open)");
  }
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
