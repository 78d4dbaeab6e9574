// Bad command lines and bad input files (DESIGN §8, §9): exit code 2 and a message that names the
// flag, the argument, or the file and its JSON pointer; never a crash, an internal error, or a
// silently wrong answer; and no output written (nor any work done) when an output cannot be.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/refused.h"
#include "tests/cli/run_protwin.h"
#include "tests/cli/scratch_files.h"

namespace {

const std::string kSrc = PROTWIN_SOURCE_DIR;
const std::string kPlan = kSrc + "/examples/prefetch_pipeline.plan.json";
const std::string kRates = kSrc + "/examples/rates.json";

// A scratch folder of this test process, removed with its files at exit.
const std::string& scratch() { return scratch_dir("inputs"); }

std::string write(const std::string& name, const std::string& text) {
  return write_scratch("inputs", name, text);
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

bool have_runtime() { return exists(std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt"); }

}  // namespace

TEST_CASE("a stray argument is refused by name in every subcommand, with a one-line hint", "[cli][errors]") {
  // It used to be dropped: `search llama-13b` searched the default gpt2-10b.
  CHECK(refused("search llama-13b --machine a100-server", "unexpected argument 'llama-13b'") ==
        "protwin search: error: unexpected argument 'llama-13b'; options are flags (--name value)\n"
        "hint: see 'protwin search --help'\n");
  for (const char* cmd : {"compare", "capacity", "sweep", "simulate", "validate", "estimate", "estimate-search",
                          "simulate-4d", "search-4d", "models", "machines", "calibrate", "bench engine",
                          "model gpt2-small", "machine a100-server", "import-kineto trace.json",
                          "machine merge a100-server frag.json"})
    refused(std::string(cmd) + " stray", "unexpected argument 'stray'");
  // The multi-line usage of `machine` gives a one-line hint.
  CHECK(refused("machine a100-server extra", "extra") ==
        "protwin machine: error: unexpected argument 'extra'; options are flags (--name value)\n"
        "hint: see 'protwin machine --help'\n");
}

TEST_CASE("integer flags have sane bounds: overflow is refused naming the flag", "[cli][errors]") {
  const std::string big = "9223372036854775807";
  refused("estimate-search --model llama3.1-8b --gpus 8 --gpu-memory-GB 80 --gbs " + big,
          "--gbs " + big + ": out of range; expected an integer from 1 to 16777216");
  refused("search-4d --model llama3.1-8b --machine dgx-a100 --seq 2048 --nodes 1 --gbs " + big, "--gbs " + big);
  refused("search-4d --model llama3.1-8b --machine dgx-a100 --seq 2048 --nodes 1 --gbs 100000000",
          "--gbs 100000000: out of range");
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 100000000", "--gbs 100000000: out of range");
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 --seq 1000000000",
          "--seq 1000000000: out of range; expected an integer from 0 to 1048576");
  // Within the bounds, but more micro-batches or tokens than can be simulated: still --gbs.
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --seq 1024 --gbs 1048576",
          "--gbs 1048576: 1048576 micro-batches (GBS/(MBS*DP)) make a plan of about");
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --seq 1048576 --gbs 4096",
          "--gbs 4096: GBS*seq = 4096*1048576 tokens per iteration, more than the 1073741824");
  refused("estimate --model llama3.1-8b --dp 4611686018427387904 --tp 2", "--dp 4611686018427387904: out of range");
  refused("estimate --model llama3.1-8b --dp 1048576 --tp 1048576",
          "--tp/--cp/--pp/--dp: TP*CP*PP*DP = 1048576*1*1*1048576 is more than 16777216 GPUs");
  refused("estimate --model llama3.1-8b --pad-vocab 4611686018427387904", "--pad-vocab 4611686018427387904");
  refused("model gpt2-1b --batch " + big, "--batch " + big + ": out of range");
  refused("simulate --model gpt2-small --machine rtx3090-server --batch " + big, "--batch " + big);
  refused("search --model gpt2-small --gpus 1 --batch 100000", "--batch 100000: out of range");
  // The flag at fault, not a derived one (--gpus) or a neighbour (--vpp 1).
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 --dp 4611686018427387904 --tp 2",
          "--dp 4611686018427387904: out of range");
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 --dp 1048576 --tp 1048576",
          "--tp/--cp/--pp/--dp: TP*CP*PP*DP = 1048576*1*1*1048576 is more than 16777216 GPUs");
  CHECK(refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 --pp 64", "--pp 64") ==
        "protwin simulate-4d: error: --pp 64: layers 32 are not divisible by PP 64\n");
}

TEST_CASE("estimate-search checks the estimator's switches as estimate does (it crashed)", "[cli][errors]") {
  const std::string s = "estimate-search --model llama3.1-8b --gpus 8 --gpu-memory-GB 80 --gbs 64 ";
  for (const char* stage : {"9", "4", "-1"}) {
    const std::string want = std::string("--zero-stage ") + stage + ": expected 0, 1, 2 or 3";
    refused(s + "--zero-stage " + stage, want);
    refused(s + "--method zero --zero-stage " + stage, want);
    refused("estimate --model llama3.1-8b --zero-stage " + std::string(stage), want);
  }
  refused(s + "--pad-vocab -1", "--pad-vocab -1: out of range; expected an integer from 0 to 65536");
  refused("estimate --model llama3.1-8b --pad-vocab -1", "--pad-vocab -1: out of range");
}

TEST_CASE("thread counts, the learning rate and non-finite numbers are refused naming the flag", "[cli][errors]") {
  const std::string want = "--threads 100000: out of range; expected an integer from 1 to 256";
  refused("search --model gpt2-small --threads 100000", want);
  refused("compare --model gpt2-small --threads 100000", want);
  refused("sweep --model gpt2-small --set host.cores=12 --threads 100000", want);
  refused("capacity --threads 100000", want);
  refused("search-4d --model llama3.1-8b --machine dgx-a100 --nodes 1 --gbs 64 --threads 100000", want);
  refused("calibrate --threads 0", "--threads 0: out of range");
  refused("calibrate --threads -1", "--threads -1: out of range");
  refused("estimate --model llama3.1-8b --gpu-memory-GB inf", "--gpu-memory-GB inf: expected a finite number");
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 --gpu-memory-GB inf", "--gpu-memory-GB inf");
  refused("search-4d --model llama3.1-8b --machine dgx-a100 --nodes 1 --gbs 64 --gpu-memory-GB inf",
          "--gpu-memory-GB inf");
  refused("calibrate --device-memory-MB inf", "--device-memory-MB inf: expected a finite number");
  refused("calibrate --link-GBps inf", "--link-GBps inf: expected a finite number");
  refused("calibrate --rank-budget-s inf", "--rank-budget-s inf: expected a finite number");
  refused("calibrate --rank-budget-s -1", "--rank-budget-s: expected a number >= 0, got -1");
  refused("machine rtx3090-server --set host_link.h2d.pinned_GBps=inf",
          "--set host_link.h2d.pinned_GBps: expected a finite number, got \"inf\"");
  if (!have_runtime()) return;  // profile and train run in protwin-rt
  refused("profile --compute-threads -3", "--compute-threads -3: out of range; expected an integer from 0 to 256");
  refused("train --plan " + kPlan + " --steps 1 --compute-threads -1", "--compute-threads -1: out of range");
  refused("train --plan " + kPlan + " --steps 1 --lr nan", "--lr nan: expected a finite number");
  refused("train --plan " + kPlan + " --steps 1 --lr -1", "--lr -1: expected a learning rate > 0");
}

TEST_CASE("simulate --plan refuses the flags that compile a plan, and warns about another machine", "[cli][errors]") {
  for (const char* flag : {"--policy k.json", "--knob n_persist=2", "--dtype bf16", "--batch 4", "--gpus 2",
                           "--seq 64", "--flash", "--plan-out p.json"}) {
    const std::string name = std::string(flag).substr(0, std::string(flag).find(' '));
    refused("simulate --plan " + kPlan + " " + flag, name + ": only with --model (a --plan is simulated as it is)");
  }
  refused("simulate --plan " + kPlan + " --set host.cores=4", "--set: only with --machine");
  const std::string plan = scratch() + "/p3090.json";
  REQUIRE(run_protwin("search --model gpt2-small --machine rtx3090-server --gpus 1 --batch 2 -o " + plan).code == 0);
  const CliResult same = run_protwin("simulate --plan " + plan + " --machine rtx3090-server");
  CHECK(same.code == 0);
  CHECK(same.err.empty());
  const CliResult other = run_protwin("simulate --plan " + plan + " --machine a100-server");
  CHECK(other.code == 0);
  CHECK(other.err == "protwin simulate: warning: " + plan +
                         " was compiled for machine rtx3090-server; simulating it with a100-server (its memory "
                         "pools keep rtx3090-server's capacities)\n");
}

TEST_CASE("rates out of range are refused naming the file and the pointer", "[cli][errors]") {
  nlohmann::json r = nlohmann::json::parse(slurp(kRates));
  r["streams"]["compute"]["latency_us"] = 1e300;
  const std::string slow = write("slow_rates.json", r.dump());
  refused("simulate --plan " + kPlan + " --rates " + slow,
          slow + ":/streams/compute/latency_us: expected a number <= 1e+09, got number 1e+300");
  r = nlohmann::json::parse(slurp(kRates));
  r["streams"]["compute"]["tflops"] = 1e-300;
  const std::string tiny = write("tiny_rates.json", r.dump());
  refused("simulate --plan " + kPlan + " --rates " + tiny,
          tiny + ":/streams/compute/tflops: expected a number >= 1e-06, got number 1e-300");
  // Sane rates, absurd work: the op, the rates and the horizon are named.
  nlohmann::json p = nlohmann::json::parse(slurp(kPlan));
  p["ops"][2]["work"]["flops"] = 1e30;
  const std::string huge = write("huge_flops.plan.json", p.dump());
  refused("simulate --plan " + huge + " --rates " + kRates,
          huge + ":/ops/2 (forward, stream compute): 1e+30 flops and 0 bytes take longer than the simulator's horizon "
          "of 2^62 ns (146 years) at the rates of " + kRates);
  refused("simulate --plan " + huge + " --machine rtx3090-server",
          huge + ":/ops/2 (forward, stream compute): takes 9.22337e+09 s from");
}

TEST_CASE("validate and simulate refuse unknown op kinds, missing chunks and huge memory effects", "[cli][errors]") {
  const nlohmann::json good = nlohmann::json::parse(slurp(kPlan));
  nlohmann::json p = good;
  p["ops"][3]["kind"] = "teleport";
  const std::string kind = write("teleport.json", p.dump());
  p = good;
  p["ops"][0]["chunk"] = 99;
  const std::string chunk = write("chunk99.json", p.dump());
  p = good;
  p["ops"][0]["mem"][0]["delta_bytes"] = INT64_MAX;
  const std::string delta = write("delta.json", p.dump());
  for (const char* cmd : {"validate", "simulate"}) {
    refused(std::string(cmd) + " --plan " + kind, kind + ":/ops/3/kind: unknown op kind \"teleport\"; expected one of forward, ");
    refused(std::string(cmd) + " --plan " + chunk,
            chunk + ":/ops/0/chunk: chunk 99 does not exist: expected -1 (none) or a chunk id from 0 to 3");
    refused(std::string(cmd) + " --plan " + delta,
            delta + ":/ops/0/mem/0/delta_bytes: expected an integer <= 1125899906842624, got integer 9223372036854775807");
  }
}

TEST_CASE("import-kineto refuses bad events naming the file and the pointer", "[cli][errors]") {
  const std::string out = scratch() + "/profile.json";
  const std::string name = write("name5.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 3}]})");
  refused("import-kineto " + name + " -o " + out, name + ":/traceEvents/0/name: expected a string, got integer 5");
  const std::string dev = write("dev3.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,
      "dur": 3}], "deviceProperties": [{"name": 3}]})");
  refused("import-kineto " + dev + " -o " + out, dev + ":/deviceProperties/0/name: expected a string, got integer 3");
  const std::string arr = write("array.json", "[1, 2]");
  refused("import-kineto " + arr + " -o " + out, arr + ":/0: expected a trace event object");
  const std::string dur = write("dur.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -5}]})");
  refused("import-kineto " + dur + " -o " + out, dur + ":/traceEvents/0/dur: expected a number >= 0, got integer -5");
  CHECK_FALSE(exists(out));
}

TEST_CASE("machine merge names the fragment, unknown fields are refused, --set takes strings", "[cli][errors]") {
  const std::string out = scratch() + "/merged.json";
  auto frag = [&](const std::string& file, const std::string& gpu, const std::string& field) {
    return write(file, "{\"gpu\": " + gpu + ", \"provenance\": {\"/gpu/" + field +
                           "\": {\"kind\": \"measured\", \"source\": \"test\"}}}");
  };
  const std::string neg = frag("neg.json", "{\"count\": -3}", "count");
  CHECK(refused("machine merge a100-server " + neg + " -o " + out, neg) ==
        "protwin machine: error: " + neg + " (merged into a100-server.json):/gpu/count: expected an integer >= 1, "
        "got integer -3\n");
  const std::string bogus = frag("bogus.json", "{\"bogus_field\": 3}", "bogus_field");
  refused("machine merge a100-server " + bogus + " -o " + out,
          bogus + " (merged into a100-server.json):/gpu: unknown field \"bogus_field\" (known: allocator, ");
  const std::string huge = frag("huge.json", "{\"count\": 2147483648}", "count");
  refused("machine merge a100-server " + huge + " -o " + out,
          huge + " (merged into a100-server.json):/gpu/count: expected an integer <= 4096, got integer 2147483648");
  CHECK_FALSE(exists(out));
  // A probe fragment's header and raw measurements are not machine fields.
  const std::string probe = write("probe.json", R"({"format": "protwin.machine-fragment", "version": 1,
      "generator": "protwin-probe", "gpu": {"launch_floor_us": 3.5}, "raw": {"hbm": [1, 2]},
      "provenance": {"/gpu/launch_floor_us": {"kind": "measured", "source": "probe"}}})");
  const CliResult ok = run_protwin("machine merge a100-server " + probe + " -o " + out);
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  const nlohmann::json merged = nlohmann::json::parse(slurp(out));
  CHECK(merged["gpu"]["launch_floor_us"] == 3.5);
  CHECK_FALSE(merged.contains("raw"));
  // --set overrides string fields too; numbers stay numbers.
  const CliResult named = run_protwin("machine rtx3090-server --set gpu.name=Foo --json");
  REQUIRE(named.code == 0);
  const nlohmann::json m = nlohmann::json::parse(named.out);
  CHECK(m["gpu"]["name"] == "Foo");
  CHECK(m["provenance"]["/gpu/name"]["source"] == "--set gpu.name=Foo");
  refused("machine rtx3090-server --set collectives.intra_node.host_staged=maybe",
          "--set collectives.intra_node.host_staged: expected true or false, got \"maybe\"");
}

TEST_CASE("outputs are checked before any work and before anything is written", "[cli][errors]") {
  const std::string nodir = scratch() + "/nodir";
  const std::string folder = "folder " + nodir + " does not exist";
  refused("search --model gpt2-small --gpus 1 -o " + nodir + "/p.json", "-o " + nodir + "/p.json: " + folder);
  refused("search --model gpt2-small --gpus 1 --chrome-trace " + nodir + "/t.json", "--chrome-trace " + nodir);
  refused("compare --model gpt2-small --gpus 1 --chrome-trace " + nodir + "/t.json", folder);
  refused("compare --model gpt2-small --gpus 1 -o " + nodir + "/p.json", folder);
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 --plan-out " + nodir + "/p.json",
          "--plan-out " + nodir + "/p.json: " + folder);
  refused("simulate-4d --model llama3.1-8b --machine dgx-a100 --gbs 8 -o " + nodir + "/r.json", folder);
  refused("machine merge a100-server frag.json -o " + nodir + "/m.json", folder);
  refused("import-kineto trace.json -o " + nodir + "/p.json", folder);
  refused("simulate --model gpt2-small --machine rtx3090-server --gpus 1 --plan-out " + nodir + "/p.json", folder);
  // Nothing written when a later output cannot be.
  const std::string ok = scratch() + "/ok.json";
  refused("simulate --plan " + kPlan + " --rates " + kRates + " -o " + ok + " --chrome-trace " + nodir + "/t.json",
          "--chrome-trace " + nodir + "/t.json: " + folder);
  CHECK_FALSE(exists(ok));
  // A folder is not a file name.
  refused("simulate --plan " + kPlan + " --rates " + kRates + " -o " + scratch(),
          "-o " + scratch() + ": is a folder; expected a file name");
  // calibrate's -o is a folder it creates (with its parents), only once its inputs are good; a
  // file in the way is refused up front.
  const std::string cal = scratch() + "/cal/deeper";
  refused("calibrate --model nosuch -o " + cal, have_runtime() ? "unknown model 'nosuch'" : "LibTorch runtime");
  CHECK_FALSE(exists(scratch() + "/cal"));
  const std::string file = write("a_file", "x");
  refused("calibrate -o " + file + "/sub", "-o " + file + "/sub: " + file + " exists and is not a folder");
}

TEST_CASE("protwin --help lists every subcommand once", "[cli]") {
  const CliResult r = run_protwin("--help");
  REQUIRE(r.code == 0);
  for (const char* sub : {"\n  bench ", "\n  simulate ", "\n  search "}) {
    const size_t first = r.out.find(sub);
    CHECK(first != std::string::npos);
    CHECK(r.out.find(sub, first + 1) == std::string::npos);
  }
  CHECK(r.out.find("benchmarks of protwin itself (engine, policy, adam) and of this machine (stability)") !=
        std::string::npos);
}
