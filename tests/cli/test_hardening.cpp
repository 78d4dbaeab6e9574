// Issue #20's reproducers, end to end: each input once crashed protwin, made it exit 1, hang, or
// answer silently wrong. Oracles: exit code 2 and the message naming the file and JSON pointer or
// the flag; the file system's state after writing through links and at special files; sizes
// printed against the files' real sizes; the progress line against its closed form.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/progress.h"
#include "tests/cli/refused.h"
#include "tests/cli/run_protwin.h"
#include "tests/cli/scratch_files.h"

namespace {

namespace fs = std::filesystem;
const std::string kSrc = PROTWIN_SOURCE_DIR;
const std::string kPlan = kSrc + "/examples/prefetch_pipeline.plan.json";
const std::string kRates = kSrc + "/examples/rates.json";

const std::string& scratch() { return scratch_dir("hardening"); }

std::string write(const std::string& name, const std::string& text) {
  return write_scratch("hardening", name, text);
}

}  // namespace

TEST_CASE("deeply nested JSON is refused by every reader, not a stack overflow", "[cli][hardening]") {
  const int n = 100000;  // the issue's 200 KB file
  const std::string nest = std::string(n, '[') + std::string(n, ']');
  const std::string plan = write("deep.plan.json", "{\"format\":\"protwin.plan\",\"version\":4,\"meta\":{},\"streams\":[],"
                                                   "\"tensors\":[],\"chunks\":[],\"ops\":[" + nest + "]}");
  refused("validate --plan " + plan, plan + ":/ops/0/0/0/0/0/0/0/0/0/0/0/...: nested deeper than 256 levels");
  const std::string deep = write("deep.json", "{\"a\":" + nest + "}");
  refused("simulate --plan " + kPlan + " --rates " + deep, deep + ":/a/0/0/0/0/0/0/0/0/0/0/0/...: nested deeper");
  refused("machine " + deep, deep + ":/a/0/0/0/0/0/0/0/0/0/0/0/...: nested deeper");
  refused("model " + deep, deep + ":/a/0/0/0/0/0/0/0/0/0/0/0/...: nested deeper");
  refused("import-kineto " + deep + " -o " + scratch() + "/p.json", "nested deeper than 256 levels");
}

TEST_CASE("a null model field is refused naming it, never a default or a crash", "[cli][hardening]") {
  for (const char* field : {"heads", "hidden", "layers", "vocab"}) {
    nlohmann::json spec = {{"name", "x"}, {"family", "llama"}, {"hidden", 256}, {"layers", 2}, {"heads", 4}};
    spec[field] = nullptr;
    const std::string path = write(std::string("null_") + field + ".json", spec.dump());
    const std::string err = refused("model " + path, path + ":/" + field + ": expected an integer > 0");
    CHECK(err.find("got null\n") != std::string::npos);
    CHECK(err.find("null null") == std::string::npos);
  }
  // An inline key given twice (found by fuzz_model) is refused like a duplicate JSON key.
  refused("model 'gpt:hidden=1024,layers=2,,,,layers=24214,heads=16,'", "'layers' given twice");
  // A GPT model without learned positions would silently be a RoPE model.
  refused("model 'gpt:hidden=256,layers=2,heads=4,max_positions=0' --seq 1024",
          "/max_positions: expected an integer > 0 and <= 16777216, got integer 0");
}

TEST_CASE("knob values never wrap, and out-of-range knobs name their file", "[cli][hardening]") {
  const std::string base = "simulate --model gpt2-tiny --machine host-emulated --gpus 1 --batch 1 ";
  refused(base + "--knob n_persist=4294967298", "/n_persist: expected an integer <= 16777216, got integer 4294967298");
  refused(base + "--knob swap_spacing=9223372036854775807",
          "/swap_spacing: expected an integer <= 16777216, got integer 9223372036854775807");
  const std::string policy = write("too_many.policy.json", R"({"system": "protrain", "n_persist": 999})");
  refused(base + "--policy " + policy, "error: " + policy + ": knob n_persist=999: valid range is [0, ");
}

TEST_CASE("outputs go through symbolic links to their targets and never replace special files", "[cli][hardening]") {
  const std::string target = scratch() + "/report_target.json", link = scratch() + "/report_link.json";
  const std::string trace_target = scratch() + "/trace_target.json", trace_link = scratch() + "/trace_link.json";
  fs::create_symlink(target, link);
  fs::create_symlink(trace_target, trace_link);
  const CliResult r = run_protwin("simulate --plan " + kPlan + " --rates " + kRates + " -o " + link + " --chrome-trace " +
                                  trace_link);
  REQUIRE(r.code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_symlink(trace_link));
  CHECK(nlohmann::json::parse(slurp(target))["format"] == "protwin.report");
  CHECK(nlohmann::json::parse(slurp(trace_target)).contains("traceEvents"));
  refused("simulate --plan " + kPlan + " --rates " + kRates + " -o /dev/full",
          "-o /dev/full: is not a regular file (a device, pipe or socket); refusing to replace it");
  refused("simulate --plan " + kPlan + " --rates " + kRates + " --chrome-trace /dev/null",
          "--chrome-trace /dev/null: is not a regular file");
  struct stat st {};
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("messages name the flag, the file and the pointer", "[cli][hardening]") {
  // A --set that breaks the machine blames the flag, not the machine file.
  refused("search --model gpt2-tiny --machine host-emulated --set gpu.count=0", "error: --set gpu.count=0: /gpu/count: ");
  // Post-parse plan errors: the file and /ops/N.
  nlohmann::json p = nlohmann::json::parse(slurp(kPlan));
  p["ops"][2]["stream"] = "gpu0";
  const std::string stream = write("stream.plan.json", p.dump());
  refused("validate --plan " + stream, stream + ":/ops/2 (forward, stream gpu0): unknown stream \"gpu0\"");
  p = nlohmann::json::parse(slurp(kPlan));
  p["ops"][1]["deps"] = {5};
  const std::string cycle = write("cycle.plan.json", p.dump());
  refused("validate --plan " + cycle, cycle + ":/ops/1 (");
  // null is named once.
  p = nlohmann::json::parse(slurp(kPlan));
  p["version"] = nullptr;
  const std::string null_version = write("null_version.plan.json", p.dump());
  CHECK(refused("validate --plan " + null_version, null_version + ":/version: expected an integer, got null\n")
            .find("null null") == std::string::npos);
  // A plan of an older version (here version 1, its kernels in attrs) is refused with the command
  // that writes it again, and that command's plan reads.
  const std::string v1 = kSrc + "/tests/fuzz/corpus/plan/version-1.json";
  refused("validate --plan " + v1, v1 + ":/version: unsupported plan version 1 (this protwin reads version 4)\n"
                                        "hint: recompile the plan with this protwin: protwin simulate --model M "
                                        "--machine H --policy knobs.json --plan-out plan.json");
  const std::string again = scratch() + "/again.plan.json";
  REQUIRE(run_protwin("simulate --model gpt2-tiny --machine host-emulated --plan-out " + again).code == 0);
  CHECK(run_protwin("validate --plan " + again).code == 0);
  // A folder given as a plan.
  refused("validate --plan " + scratch(), scratch() + ": is a folder; expected a file");
  // A key given twice.
  const std::string text = slurp(kPlan);
  const std::string twice = write("twice.plan.json", "{\"version\": 4, " + text.substr(text.find('{') + 1));
  refused("validate --plan " + twice, twice + ":/: duplicate key \"version\"");
  // Kineto thread ids are numbers or names.
  const std::string pid = write("pid.trace.json",
                                R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"pid":[1,[2]],"tid":7}]})");
  refused("import-kineto " + pid + " -o " + scratch() + "/pid.profile.json",
          pid + ":/traceEvents/0/pid: expected a number or a string, got array");
}

TEST_CASE("a rates file prices every stream of the plan, or has a default", "[cli][hardening]") {
  nlohmann::json r = nlohmann::json::parse(slurp(kRates));
  r["streams"].erase("compute");
  const std::string no_compute = write("no_compute.rates.json", r.dump());
  refused("simulate --plan " + kPlan + " --rates " + no_compute,
          no_compute + ":/streams: no rate for the plan's stream \"compute\" (listed: ");
  r["default"] = {{"tflops", 10}};
  const std::string with_default = write("default.rates.json", r.dump());
  CHECK(run_protwin("simulate --plan " + kPlan + " --rates " + with_default).code == 0);
}

TEST_CASE("large outputs say how big they are", "[cli][hardening]") {
  const std::string plan = scratch() + "/4d.plan.json", trace = scratch() + "/4d.trace.json";
  const CliResult r = run_protwin("simulate-4d --model 'llama:hidden=512,layers=4,heads=8,kv_heads=4,vocab=1000' "
                                  "--machine dgx-a100 --tp 2 --pp 2 --dp 2 --mbs 1 --gbs 8 --seq 512 --plan-out " + plan +
                                  " --chrome-trace " + trace);
  REQUIRE(r.code == 0);
  const auto size_text = [](const std::string& p) { return protwin::cli::file_size_text(static_cast<long long>(fs::file_size(p))); };
  CHECK(r.out.find("wrote plan: " + plan + " (" + size_text(plan) + ")\n") != std::string::npos);
  CHECK(r.out.find("wrote chrome trace (open in ui.perfetto.dev): " + trace + " (" + size_text(trace) + ")\n") !=
        std::string::npos);
  CHECK(protwin::cli::file_size_text(999) == "999 B");
  CHECK(protwin::cli::file_size_text(216400000) == "216.4 MB");
  CHECK(protwin::cli::file_size_text(49000000000LL) == "49.00 GB");
}

TEST_CASE("the progress line: counts, rate and time left by the rate so far", "[cli][hardening]") {
  using protwin::cli::progress_line;
  // 21 of 50 in 6 s: 3.5/s, 29 left at 3.5/s = 8.3 s.
  CHECK(progress_line("sweeping", 21, 50, 6.0) == "sweeping [########............]  42% (21/50)  3.50/s  0:08 left");
  CHECK(progress_line("capacity", 0, 8, 3.0) == "capacity [....................]   0% (0/8)");
  CHECK(progress_line("x", 300, 1000, 10.0) == "x [######..............]  30% (300/1000)  30/s  0:23 left");
  CHECK(progress_line("x", 10, 10, 4000.0) == "x [####################] 100% (10/10)  0.00/s  0:00 left");
  // Not a terminal (tests capture stderr), or --quiet: nothing on stderr.
  const CliResult r = run_protwin("capacity --machine rtx3090-server --gpus 1 --systems ddp --max-layers 4 --quiet");
  CHECK(r.code == 0);
  CHECK(r.err.empty());
}

TEST_CASE("profile writes into the current folder by default, not over the committed machine", "[cli][hardening]") {
  if (!fs::exists(std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt")) {
    WARN("SKIPPED: protwin-rt is not built");
    return;
  }
  const CliResult r = run_protwin("profile --help");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("(=host-emulated.json)") != std::string::npos);
  CHECK(r.out.find("(=hwmodels/machines/host-emulated.json)") == std::string::npos);
}
