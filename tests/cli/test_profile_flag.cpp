// --profile on every simulating subcommand (issue 17). Oracle: a closed form. A profile that prices
// one GEMM at T and one that prices it at 2T differ, on the compute-bound plans below, by exactly
// (calls of that GEMM in the plan) x T in the simulated iteration (up to 1 ns of rounding per op);
// the ops priced per source follow from the plan's kernels; a bad profile exits 2 naming file and
// pointer; without --profile the reports stay those of the cost model without one (golden files in
// test_host_dispatch.cpp).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/gemm_profile.h"
#include "tests/cli/run_protwin.h"
#include "tests/cli/scratch_files.h"
#include "traces/op_profile.h"
#include "traces/plan.h"

namespace {
const std::string kTag = "profile_flag";
constexpr double kT = 2e-3;  // seconds per call of the profiled GEMM: large, so compute is the critical path

// The offload subcommands' setting: gpt2-tiny fp32 on the emulated device (curves only), one GPU.
const std::string kOffload = "--model gpt2-tiny --machine host-emulated --gpus 1 --dtype fp32 --batch 1";
// The 4D setting: llama-tiny on one A100 of a DGX (shape-aware model and kernel tables).
const std::string k4d = "--model llama-tiny --machine dgx-a100 --set gpu.count=1 --seq 128 --gbs 2";

nlohmann::json run_json(const std::string& args) {
  const CliResult r = run_protwin(args + " --json");
  INFO(args << "\n" << r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}

struct Profiles {
  protwin::traces::OpSignature sig;
  int64_t calls = 0;
  std::string once, twice;  // the GEMM at T and at 2T
};

// The plan `compile_args` writes with --plan-out, its first GEMM and the two profiles.
Profiles profiles_for(const std::string& compile_args, const std::string& tag) {
  const std::string plan_path = scratch_dir(kTag) + "/" + tag + ".plan.json";
  const CliResult r = run_protwin(compile_args + " --plan-out " + plan_path);
  INFO(compile_args << "\n" << r.err);
  REQUIRE(r.code == 0);
  const protwin::traces::Plan plan = protwin::traces::read_plan(plan_path);
  Profiles p;
  p.sig = first_gemm(plan);
  p.calls = calls_of(plan, p.sig);
  REQUIRE(p.calls > 0);
  p.once = gemm_profile(scratch_dir(kTag) + "/" + tag + ".once.json", p.sig, kT);
  p.twice = gemm_profile(scratch_dir(kTag) + "/" + tag + ".twice.json", p.sig, 2 * kT);
  return p;
}

void check_delta(double once_s, double twice_s, int64_t calls, int64_t ops) {
  INFO("once " << once_s << " s, twice " << twice_s << " s, " << calls << " calls");
  CHECK(twice_s - once_s == Approx(static_cast<double>(calls) * kT).margin(2e-9 * static_cast<double>(ops)));
}
}  // namespace

TEST_CASE("profile flag: one GEMM at 2T instead of T adds calls x T to every offload subcommand's iteration") {
  const Profiles p = profiles_for("simulate " + kOffload + " --knob system=ddp", "offload");
  const int64_t ops = 10000;  // a bound on the plan's ops, for the rounding margin
  auto iteration = [&](const std::string& args, const std::string& profile, auto pick) {
    return pick(run_json(args + " --profile " + profile)).template get<double>();
  };
  auto top = [](const nlohmann::json& j) { return j["iteration_s"]; };
  for (const std::string& args : {"simulate " + kOffload + " --knob system=ddp", "search " + kOffload + " --system ddp"}) {
    INFO(args);
    check_delta(iteration(args, p.once, top), iteration(args, p.twice, top), p.calls, ops);
  }
  auto ddp = [](const nlohmann::json& j) {
    for (const auto& s : j["systems"])
      if (s["name"] == "ddp") return s["iteration_s"];
    return nlohmann::json();
  };
  const std::string compare = "compare " + kOffload;
  check_delta(iteration(compare, p.once, ddp), iteration(compare, p.twice, ddp), p.calls, ops);
  auto point = [](const nlohmann::json& j) { return j["points"][0]["iteration_s"]; };
  const std::string sweep = "sweep " + kOffload + " --system ddp --set host.cores=2";
  check_delta(iteration(sweep, p.once, point), iteration(sweep, p.twice, point), p.calls, ops);

  // A plan read back and costed with --machine and --profile.
  const std::string plan_path = scratch_dir(kTag) + "/offload.plan.json";
  const std::string replay = "simulate --plan " + plan_path + " --machine host-emulated";
  check_delta(iteration(replay, p.once, top), iteration(replay, p.twice, top), p.calls, ops);
}

TEST_CASE("profile flag: simulate-4d and search-4d move by calls x T for the profiled GEMM") {
  const std::string layout = " --tp 1 --pp 1 --dp 1 --cp 1 --mbs 1";
  const Profiles p = profiles_for("simulate-4d " + k4d + layout, "4d");
  const int64_t ops = 10000;
  auto sim4d = [&](const std::string& profile) {
    return run_json("simulate-4d " + k4d + layout + " --profile " + profile)["iteration_s"].get<double>();
  };
  check_delta(sim4d(p.once), sim4d(p.twice), p.calls, ops);
  auto search4d = [&](const std::string& profile) {
    const nlohmann::json j = run_json("search-4d " + k4d + " --nodes 1 --mbs-max 1 --profile " + profile);
    REQUIRE(j["configurations"].size() == 1);  // one GPU: TP = CP = PP = DP = 1, MBS 1
    return j["configurations"][0]["iteration_s"].get<double>();
  };
  check_delta(search4d(p.once), search4d(p.twice), p.calls, ops);
}

TEST_CASE("profile flag: the ops priced per source follow from the plan's kernels") {
  const Profiles p = profiles_for("simulate " + kOffload + " --knob system=protrain --knob n_checkpoint=1", "sources");
  const protwin::traces::Plan plan = protwin::traces::read_plan(scratch_dir(kTag) + "/sources.plan.json");
  // host-emulated has no gpu.sms: without a profile every priced op is "curve". With one, an op
  // whose kernels are all the profiled GEMM is "profile", one with it and others "mixed".
  int64_t all = 0, some = 0;
  for (const auto& op : plan.ops) {
    const auto& kernels = plan.kernels_of(op);
    size_t hits = 0;
    for (const auto& k : kernels) hits += k.sig == p.sig;
    if (hits > 0 && hits == kernels.size()) ++all;
    else if (hits > 0) ++some;
  }
  REQUIRE(some > 0);
  const std::string args = "simulate --plan " + scratch_dir(kTag) + "/sources.plan.json --machine host-emulated";
  const nlohmann::json without = run_json(args)["priced_by"];
  REQUIRE(without.size() == 1);
  const int64_t priced = without["curve"].get<int64_t>();
  const nlohmann::json with = run_json(args + " --profile " + p.once)["priced_by"];
  CHECK(with.value("profile", int64_t{0}) == all);
  CHECK(with.value("mixed", int64_t{0}) == some);
  CHECK(with["curve"].get<int64_t>() == priced - all - some);
  // The text report says the same.
  const CliResult text = run_protwin(args + " --profile " + p.once);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("ops priced by: curve " + std::to_string(priced - all - some) + ", mixed " +
                                       std::to_string(some)));
  // search, compare, sweep, capacity and the 4D subcommands say it in their JSON too.
  CHECK(run_json("search " + kOffload + " --system ddp --profile " + p.once)["priced_by"].value("mixed", 0) > 0);
  const nlohmann::json cap = run_json("capacity --machine host-emulated --gpus 1 --dtype fp32 --systems protrain "
                                      "--max-layers 2 --profile " + p.once);
  REQUIRE(cap["systems"][0]["max_params"].get<int64_t>() > 0);
  CHECK(cap["systems"][0]["priced_by"].value("curve", 0) > 0);
}

TEST_CASE("profile flag: capacity is a question of memory, so a profile leaves its answer as it is") {
  const Profiles p = profiles_for("simulate " + kOffload + " --knob system=ddp", "capacity");
  const std::string args = "capacity --machine host-emulated --gpus 1 --dtype fp32 --systems ddp,protrain --max-layers 3";
  const nlohmann::json without = run_json(args), with = run_json(args + " --profile " + p.twice);
  for (size_t i = 0; i < 2; ++i) CHECK(with["systems"][i]["max_params"] == without["systems"][i]["max_params"]);
  CHECK(without["systems"][1]["max_params"].get<int64_t>() > 0);  // protrain fits some layers: not a vacuous check
}

TEST_CASE("profile flag: a bad profile exits 2 naming the file and the JSON pointer, and --rates refuses it") {
  const std::string bad = write_scratch(kTag, "bad.json",
                                        R"({"format": "protwin.profile", "version": 1, "device": "x",
 "provenance": {"kind": "measured", "source": "t"},
 "ops": [{"key": "gemm:fp32:1x2x3", "kind": "gemm", "shape": [1, 2, 3], "dtype": "fp32", "count": 1,
          "mean_us": -1, "min_us": 1, "max_us": 1, "std_us": 0}]})");
  for (const std::string& cmd : {"simulate " + kOffload, "search " + kOffload, "compare " + kOffload,
                                 "sweep " + kOffload + " --set host.cores=2", std::string("capacity --machine host-emulated --gpus 1"),
                                 "simulate-4d " + k4d, "search-4d " + k4d + " --nodes 1"}) {
    const CliResult r = run_protwin(cmd + " --profile " + bad);
    INFO(cmd << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(bad) && Catch::Contains("/ops/0/mean_us"));
  }
  const CliResult unknown = run_protwin("search " + kOffload + " --profile no-such-profile");
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no such shipped profile"));
  const CliResult rates = run_protwin("simulate --plan " + std::string(PROTWIN_SOURCE_DIR) +
                                      "/examples/prefetch_pipeline.plan.json --profile rtx3090");
  CHECK(rates.code == 2);
  CHECK_THAT(rates.err, Catch::Contains("--profile: only with --machine"));
}
