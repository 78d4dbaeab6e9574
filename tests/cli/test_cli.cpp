// The CLI contract of DESIGN §8: --help, exit codes 0 / 2, errors that name the file or flag.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "tests/cli/run_protwin.h"
#include "traces/report.h"

namespace {
const std::string kSrc = PROTWIN_SOURCE_DIR;
const std::string kPlan = kSrc + "/examples/prefetch_pipeline.plan.json";
const std::string kRates = kSrc + "/examples/rates.json";
}  // namespace

TEST_CASE("protwin --help lists the subcommands and exits 0") {
  auto r = run_protwin("--help");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.find("simulate") != std::string::npos);
  REQUIRE(r.out.find("validate") != std::string::npos);
}

TEST_CASE("unknown subcommand and unknown flag exit 2") {
  auto r = run_protwin("frobnicate");
  REQUIRE(r.code == 2);
  REQUIRE(r.err == "protwin: unknown subcommand 'frobnicate'\nhint: 'protwin --help' lists them\n");
  r = run_protwin("simulate --plann x.json");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("unrecognised option '--plann'") != std::string::npos);
}

TEST_CASE("simulate without --plan, and with a missing file, exit 2 naming the flag or file") {
  auto r = run_protwin("simulate");
  REQUIRE(r.code == 2);
  REQUIRE(r.err == "protwin simulate: error: --plan or --model is required\n");
  r = run_protwin("simulate --plan /nonexistent.json");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("/nonexistent.json: cannot open for reading") != std::string::npos);
}

TEST_CASE("validate and simulate the example plan; the report file equals what --json summarises") {
  auto v = run_protwin("validate --plan " + kPlan);
  REQUIRE(v.code == 0);
  REQUIRE(v.out.find("valid plan") != std::string::npos);
  const std::string out = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/example_report_" +
                          std::to_string(::getpid()) + ".json";
  auto s = run_protwin("simulate --plan " + kPlan + " --rates " + kRates + " -o " + out + " --json");
  REQUIRE(s.code == 0);
  const auto summary = nlohmann::json::parse(s.out);
  const auto report = protwin::traces::read_report(out);
  REQUIRE(summary["iteration_s"].get<double>() == Approx(report.iteration.seconds()));
  REQUIRE(report.ops.size() == summary["ops"].get<size_t>());
  std::remove(out.c_str());
}
