// Training loop, checkpoints and the `protwin train` CLI. Oracles: an uninterrupted run's losses
// (resume), the previous checkpoint's bytes (crash while writing), exact error messages and exit
// code 2 (bad input), and files left untouched.
#include "tests/runtime/torch_catch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/executor/runtime_plan.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/plan_fixtures.h"
#include "traces/file_io.h"

namespace protwin::rt {
namespace {

namespace fs = std::filesystem;
using testing::compile_plan;
using testing::tiny_workload;

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("protwin_rt2_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::string slurp(const std::string& path) { return traces::read_file(path); }

// An offloaded plan with every mechanism in it.
RuntimePlan offload_plan(const std::string& model = "gpt2-tiny") {
  const sim::Workload w = tiny_workload(model);
  sim::offload::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 2;
  k.n_swap = 1;
  k.n_checkpoint = 1;
  return make_runtime_plan(compile_plan(w, k), model + ".json");
}

TrainOptions options(int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.seed = 3;
  o.compute_threads = 1;
  return o;
}

TEST_CASE("a run stopped after step k and resumed gives the uninterrupted run's losses", "[runtime][train]") {
  const RuntimePlan rp = offload_plan();
  const TrainResult full = train(rp, options(6));
  const std::string dir = temp_dir("resume");
  TrainOptions first = options(3);
  first.checkpoint_dir = dir;
  const TrainResult a = train(rp, first);
  REQUIRE(fs::exists(dir + "/checkpoint.bin"));
  TrainOptions second = options(6);
  second.resume_dir = dir;
  const TrainResult b = train(rp, second);
  CHECK(b.first_step == 4);
  REQUIRE(a.losses.size() == 3);
  REQUIRE(b.losses.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(a.losses[i] == full.losses[i]);
    CHECK(b.losses[i] == full.losses[i + 3]);
  }
  // A checkpoint resumes under a different plan of the same model (it is stored per parameter).
  const sim::Workload w = tiny_workload("gpt2-tiny");
  const RuntimePlan resident = make_runtime_plan(testing::resident_plan(w), "resident.json");
  const TrainResult c = train(resident, second);
  REQUIRE(c.losses.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(std::abs(c.losses[i] - full.losses[i + 3]) <= 1e-6 * full.losses[i + 3]);
  fs::remove_all(dir);
}

TEST_CASE("a crash while writing a checkpoint leaves the previous one intact", "[runtime][train]") {
  const RuntimePlan rp = offload_plan();
  const std::string dir = temp_dir("crash");
  TrainOptions o = options(2);
  o.checkpoint_dir = dir;
  train(rp, o);
  const std::string before = slurp(dir + "/checkpoint.bin");
  set_checkpoint_write_hook([](int64_t) { throw Error("simulated crash while writing the checkpoint"); });
  TrainOptions more = options(4);
  more.resume_dir = dir;
  more.checkpoint_dir = dir;
  CHECK_THROWS_WITH(train(rp, more), "simulated crash while writing the checkpoint");
  set_checkpoint_write_hook({});
  CHECK(slurp(dir + "/checkpoint.bin") == before);
  const Checkpoint ck = read_checkpoint(dir);
  CHECK(ck.step == 2);
  fs::remove_all(dir);
}

TEST_CASE("a damaged checkpoint is refused naming the file, and nothing is overwritten", "[runtime][train]") {
  const RuntimePlan rp = offload_plan();
  const std::string dir = temp_dir("corrupt");
  TrainOptions o = options(1);
  o.checkpoint_dir = dir;
  train(rp, o);
  const std::string path = dir + "/checkpoint.bin";
  std::string bytes = slurp(path);
  bytes[bytes.size() - 5] = static_cast<char>(bytes[bytes.size() - 5] ^ 0x5a);
  traces::write_file_atomic(path, bytes);
  TrainOptions r = options(3);
  r.resume_dir = dir;
  r.checkpoint_dir = dir;
  CHECK_THROWS_WITH(train(rp, r), path + ": corrupt checkpoint: checksum mismatch");
  CHECK(slurp(path) == bytes);
  traces::write_file_atomic(path, bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(read_checkpoint(dir), path + ": corrupt checkpoint: truncated payload");
  traces::write_file_atomic(path, "not a checkpoint at all");
  CHECK_THROWS_WITH(read_checkpoint(dir), path + ": corrupt checkpoint: bad magic (not a protwin checkpoint)");
  fs::remove_all(dir);
}

TEST_CASE("bad inputs to training are refused before the first step", "[runtime][train]") {
  const RuntimePlan rp = offload_plan();
  TrainOptions o = options(1);
  o.data = "/nonexistent/protwin.txt";
  CHECK_THROWS_WITH(train(rp, o), "--data /nonexistent/protwin.txt: cannot open the data file");
  // A checkpoint of another model.
  const std::string dir = temp_dir("other");
  TrainOptions w = options(1);
  w.checkpoint_dir = dir;
  train(rp, w);
  const std::string before = slurp(dir + "/checkpoint.bin");
  const RuntimePlan llama = offload_plan("llama-tiny");
  TrainOptions r = options(2);
  r.resume_dir = dir;
  r.checkpoint_dir = dir;
  try {
    train(llama, r);
    FAIL("a checkpoint of another model was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).rfind(dir + "/checkpoint.bin: checkpoint of another model (", 0) == 0);
  }
  CHECK(slurp(dir + "/checkpoint.bin") == before);
  fs::remove_all(dir);
}

// ---- CLI (the protwin-rt binary) ----
struct Cmd {
  int exit_code;
  std::string out, err;
};

Cmd run_cli(const std::string& args, const std::string& dir) {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const std::string cmd = std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

TEST_CASE("protwin train: JSON result, measured report, and exit 2 on bad input", "[runtime][train][cli]") {
  if (!fs::exists(std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt")) {
    WARN("SKIPPED: protwin-rt is not built");
    return;
  }
  const std::string dir = temp_dir("cli");
  const RuntimePlan rp = offload_plan();
  traces::write_plan(rp.plan, dir + "/plan.json");
  Cmd ok = run_cli("train --plan " + dir + "/plan.json --steps 2 --compute-threads 1 --json -o " + dir +
                       "/measured.json --chrome-trace " + dir + "/trace.json",
                   dir);
  REQUIRE(ok.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(ok.out);
  CHECK(j["losses"].size() == 2);
  CHECK(j["iteration_s"].size() == 2);
  CHECK(j["tokens_per_s"].get<double>() > 0);
  CHECK(j["plan_peak_device_bytes"].get<int64_t>() <= j["plan_device_high_water_bytes"].get<int64_t>());
  CHECK(j["peak_device_reserved_bytes"].get<int64_t>() >= j["peak_device_bytes"].get<int64_t>());
  CHECK(j["peak_host_bytes"].get<int64_t>() > 0);
  CHECK(traces::read_report(dir + "/measured.json").meta["source"] == "runtime");
  CHECK(fs::exists(dir + "/trace.json"));

  // Bad inputs: exit 2, a clear message, the previous output left alone.
  const std::string measured = slurp(dir + "/measured.json");
  Cmd missing = run_cli("train --plan " + dir + "/plan.json --steps 2 --data " + dir + "/nope.txt -o " + dir +
                            "/measured.json",
                        dir);
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "protwin train: error: --data " + dir + "/nope.txt: cannot open the data file\n");
  nlohmann::json bad = traces::plan_to_json(rp.plan);
  bad["meta"]["model_spec"]["family"] = "opt";
  traces::write_file_atomic(dir + "/opt.json", bad.dump());
  Cmd other = run_cli("train --plan " + dir + "/opt.json --steps 1 -o " + dir + "/measured.json", dir);
  CHECK(other.exit_code == 2);
  CHECK(other.err == "protwin train: error: " + dir +
                         "/opt.json:/meta/model_spec/family: the runtime implements gpt2 and llama, got \"opt\"\n");
  CHECK(slurp(dir + "/measured.json") == measured);
  // Outputs into a folder that does not exist are refused before any work is done.
  Cmd nodir = run_cli("train --plan " + dir + "/plan.json --steps 2 -o " + dir + "/no/measured.json", dir);
  CHECK(nodir.exit_code == 2);
  CHECK(nodir.err == "protwin train: error: -o " + dir + "/no/measured.json: folder " + dir + "/no does not exist\n");
  Cmd noprof = run_cli("profile -o " + dir + "/no/m.json --profile-out " + dir + "/p.json", dir);
  CHECK(noprof.exit_code == 2);
  CHECK(noprof.err == "protwin profile: error: -o " + dir + "/no/m.json: folder " + dir + "/no does not exist\n");
  // The runtime binary lists each of its subcommands once.
  Cmd help = run_cli("--help", dir);
  CHECK(help.exit_code == 0);
  for (const char* sub : {"\n  train ", "\n  profile ", "\n  bench "}) {
    const size_t first = help.out.find(sub);
    CHECK(first != std::string::npos);
    CHECK(help.out.find(sub, first + 1) == std::string::npos);
  }
  Cmd noise = run_cli("bench stability --seconds 0.5 --interval 0.1 --json", dir);
  REQUIRE(noise.exit_code == 0);
  const nlohmann::json n = nlohmann::json::parse(noise.out);
  CHECK(n["samples"].get<size_t>() >= 2);
  CHECK(n["samples_gflops"].size() == n["samples"].get<size_t>());
  CHECK(n["min"].get<double>() > 0);
  CHECK(n["p10"].get<double>() <= n["median"].get<double>());
  CHECK(n["median"].get<double>() <= n["p90"].get<double>());
  CHECK(run_cli("bench stability --seconds 0", dir).err == "protwin bench: error: --seconds: expected a number > 0, got 0\n");
  Cmd adam = run_cli("bench adam --params 100000 --json", dir);
  REQUIRE(adam.exit_code == 0);
  const nlohmann::json a = nlohmann::json::parse(adam.out);
  for (const char* key : {"params", "protwin_params_per_s", "torch_params_per_s", "speedup", "dram_GBps"})
    CHECK(a.contains(key));
  fs::remove_all(dir);
}

// Issue #20's reproducers: each was a crash, a hang, exit 1 or a silent wrong answer.
TEST_CASE("train refuses what it cannot do: a rate near zero, nothing left to train, overlapping parameters",
          "[runtime][train][hardening]") {
  const RuntimePlan rp = offload_plan();
  TrainOptions slow = options(1);
  slow.link_gbps = 1e-12;  // slept practically forever
  CHECK_THROWS_WITH(train(rp, slow), "--link-GBps 1e-12: expected 0 (unthrottled) or a rate from 0.01 to 10000 GB/s");

  // --resume with --steps at or below the checkpoint's step: said, not an empty table.
  const std::string dir = temp_dir("nothing_left");
  TrainOptions first = options(2);
  first.checkpoint_dir = dir;
  train(rp, first);
  TrainOptions again = options(2);
  again.resume_dir = dir;
  CHECK_THROWS_WITH(train(rp, again), "--steps 2: the checkpoint in " + dir +
                                          " is at step 2 already; nothing to train (--steps counts all steps, "
                                          "e.g. --steps 12 trains 10 more)");

  // Two parameters of one chunk at the same offset would overwrite each other.
  nlohmann::json j = traces::plan_to_json(rp.plan);
  auto& params = j["chunks"][0]["params"];
  REQUIRE(params.size() >= 2);
  params[1]["offset"] = params[0]["offset"];
  const std::string first_name = params[0]["name"], second_name = params[1]["name"];
  CHECK_THROWS_WITH(make_runtime_plan(traces::plan_from_json(j, "overlap.json"), "overlap.json"),
                    Catch::StartsWith("overlap.json:/chunks/0/params/1/offset: " + second_name + " at element 0 overlaps " +
                                      first_name));
  fs::remove_all(dir);
}

TEST_CASE("the checkpoint's checksum covers its header: an edited step or version is refused",
          "[runtime][train][hardening]") {
  const RuntimePlan rp = offload_plan();
  const std::string dir = temp_dir("header");
  TrainOptions o = options(1);
  o.checkpoint_dir = dir;
  train(rp, o);
  const std::string path = dir + "/checkpoint.bin";
  const std::string good = slurp(path);
  CHECK(read_checkpoint(dir).step == 1);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string b = good;
    const size_t at = b.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(from.size() == to.size());  // same length: the header length still matches
    b.replace(at, from.size(), to);
    traces::write_file_atomic(path, b);
  };
  edited("\"step\":1", "\"step\":7");
  CHECK_THROWS_WITH(read_checkpoint(dir), path + ": corrupt checkpoint: checksum mismatch");
  edited("\"version\":2", "\"version\":3");
  CHECK_THROWS_WITH(read_checkpoint(dir), path + " (header):/version: unsupported checkpoint header version 3 (this protwin reads version 2)");
  edited("PROTWIN-CKPT v2", "PROTWIN-CKPT v1");
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::StartsWith(path + ": checkpoint format v1 from another protwin version"));
  traces::write_file_atomic(path, good);
  CHECK(read_checkpoint(dir).step == 1);
  fs::remove_all(dir);
}

TEST_CASE("train --data refuses an endless device, and --help lists every flag", "[runtime][train][hardening][cli]") {
  if (!fs::exists(std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt")) {
    WARN("SKIPPED: protwin-rt is not built");
    return;
  }
  const std::string dir = temp_dir("cli_hardening");
  const RuntimePlan rp = offload_plan();
  traces::write_plan(rp.plan, dir + "/plan.json");
  Cmd zero = run_cli("train --plan " + dir + "/plan.json --steps 1 --data /dev/zero", dir);
  CHECK(zero.exit_code == 2);
  CHECK(zero.err == "protwin train: error: --data /dev/zero: more than 256 MiB from a file that is not a regular file\n");
  Cmd big = run_cli("bench adam --params 100000000000000", dir);
  CHECK(big.exit_code == 2);
  CHECK(big.err.rfind("protwin bench: error: --params 100000000000000: needs 1.49012e+06 GiB (16 B per parameter), "
                      "more than this machine's ", 0) == 0);
  Cmd help = run_cli("train --help", dir);
  REQUIRE(help.exit_code == 0);
  const std::string usage = help.out.substr(0, help.out.find('\n'));
  for (const char* flag : {"--plan", "--steps", "--data", "--seed", "--lr", "--link-GBps", "--device", "--compute-threads",
                           "-o", "--chrome-trace", "--checkpoint", "--checkpoint-every", "--resume", "--json"}) {
    INFO(flag);
    CHECK((usage.find(" " + std::string(flag)) != std::string::npos || usage.find("[" + std::string(flag)) != std::string::npos));
    CHECK(help.out.find(std::string("  ") + flag) != std::string::npos);  // and in the option list
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace protwin::rt
