// protwin simulate-4d: the JSON contract and its internal consistency, the table, the Chrome
// trace's tracks, and the errors with the exact messages naming the flags (exit 2).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/cli/run_protwin.h"

namespace {
const std::string kSmall = "'llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000'";

std::string err_of(const std::string& args) {
  const auto r = run_protwin("simulate-4d " + args);
  REQUIRE(r.code == 2);
  return r.err;
}
}  // namespace

TEST_CASE("simulate-4d --json: the fields, and tokens/s = GBS * seq / iteration", "[cli][4d]") {
  const auto r = run_protwin("simulate-4d --model " + kSmall +
                             " --machine dgx-a100 --nodes 2 --tp 2 --pp 2 --cp 2 --dp 2 --mbs 2 --gbs 32 --seq 1024 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"iteration_s", "tokens_per_s", "tflops_per_gpu", "hw_tflops_per_gpu", "mfu", "bubble_fraction",
                        "bubble_fraction_stage0", "memory_GiB", "fits_80pct", "config", "placement", "streams", "memory"})
    REQUIRE(j.contains(k));
  const double it = j["iteration_s"].get<double>();
  REQUIRE(it > 0);
  CHECK(j["tokens_per_s"].get<double>() == Approx(32.0 * 1024 / it));
  CHECK(j["mfu"].get<double>() == Approx(j["tflops_per_gpu"].get<double>() / j["peak_tflops"].get<double>()));
  CHECK(j["tflops_per_gpu"].get<double>() ==
        Approx(j["model_flops_per_token"].get<double>() * 32 * 1024 / (16 * it) / 1e12));
  CHECK(j["config"]["microbatches"] == 8);
  CHECK(j["config"]["world"] == 16);
  CHECK(j["config"]["nodes"] == 2);
  CHECK(j["placement"]["pp"]["scope"] == "inter_node");
  CHECK(j["placement"]["tp"]["scope"] == "intra_node");
  // The memory is the estimator's for this layout.
  const auto e = run_protwin("estimate --model " + kSmall +
                             " --seq 1024 --mbs 2 --tp 2 --cp 2 --pp 2 --dp 2 --num-microbatches 8 --json");
  REQUIRE(e.code == 0);
  CHECK(j["memory_GiB"].get<double>() == Approx(nlohmann::json::parse(e.out)["total_GiB"].get<double>()));
  std::set<std::string> streams;
  for (const auto& s : j["streams"]) streams.insert(s["name"].get<std::string>());
  for (const char* s : {"stage0.compute", "stage0.tp_comm", "stage0.cp_comm", "stage0.dp_comm", "stage0.p2p",
                        "stage1.compute", "stage1.p2p"})
    CHECK(streams.count(s) == 1);
}

TEST_CASE("simulate-4d: an inline llama spec equals the zoo model, the table and the Chrome trace", "[cli][4d]") {
  const std::string args = " --machine dgx-a100 --tp 2 --pp 2 --dp 2 --mbs 1 --gbs 8 --seq 2048 --json";
  const auto zoo = run_protwin("simulate-4d --model llama3.1-8b" + args);
  const auto inl = run_protwin(
      "simulate-4d --model 'llama:hidden=4096,layers=32,heads=32,kv_heads=8,ffn_hidden=14336,vocab=128256,"
      "default_seq=8192'" + args);
  REQUIRE(zoo.code == 0);
  REQUIRE(inl.code == 0);
  CHECK(nlohmann::json::parse(zoo.out)["iteration_s"] == nlohmann::json::parse(inl.out)["iteration_s"]);

  const std::string trace = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/trace4d_" + std::to_string(::getpid()) + ".json";
  const auto t = run_protwin("simulate-4d --model " + kSmall +
                             " --machine dgx-a100 --pp 2 --dp 4 --gbs 16 --seq 512 --chrome-trace " + trace);
  REQUIRE(t.code == 0);
  CHECK(t.out.find("TFLOPS/GPU") != std::string::npos);
  CHECK(t.out.find("bubble") != std::string::npos);
  const auto tj = nlohmann::json::parse(slurp(trace));
  std::set<std::string> tracks;
  for (const auto& ev : tj["traceEvents"])
    if (ev["name"] == "thread_name") tracks.insert(ev["args"]["name"].get<std::string>());
  // One track per stream and, with host dispatch (dgx-a100 has the section), one host track per stage.
  CHECK(tracks == std::set<std::string>{"stage0.compute", "stage0.dp_comm", "stage0.host", "stage0.p2p",
                                         "stage1.compute", "stage1.dp_comm", "stage1.host", "stage1.p2p"});
  std::remove(trace.c_str());
}

TEST_CASE("simulate-4d errors name the flags", "[cli][4d][errors]") {
  const std::string m = "--model llama3.1-8b --machine dgx-a100 ";
  CHECK(err_of(m + "--tp 2 --dp 6 --gbs 12") ==
        "protwin simulate-4d: error: --tp/--cp/--pp/--dp: TP*CP*PP*DP = 2*1*1*6 = 12 GPUs do not fill whole nodes "
        "of 8 GPUs (machine dgx-a100)\n");
  CHECK(err_of(m + "--nodes 1 --tp 2 --dp 8 --gbs 16") ==
        "protwin simulate-4d: error: --nodes 1: too few: 1 node(s) of 8 GPUs (machine dgx-a100) hold 8 GPUs, but "
        "TP*CP*PP*DP = 2*1*1*8 = 16 GPUs\n");
  CHECK(err_of(m + "--dp 8 --gbs 12") ==
        "protwin simulate-4d: error: --gbs 12: global batch 12 is not divisible by MBS*DP 8 (MBS 1, DP 8)\n");
  CHECK(err_of(m + "--pp 4 --dp 2 --vpp 3 --gbs 16") ==
        "protwin simulate-4d: error: --vpp 3: layers 32 are not divisible by PP*VPP = 4*3 = 12\n");
  CHECK(err_of(m + "--tp 3 --gbs 1") == "protwin simulate-4d: error: --tp 3: heads 32 is not divisible by TP 3\n");
  CHECK(err_of(m + "--tp 16 --gbs 1") == "protwin simulate-4d: error: --tp 16: KV heads 8 is not divisible by TP 16\n");
  CHECK(err_of(m + "--cp 2 --dp 4 --gbs 4 --seq 8190") ==
        "protwin simulate-4d: error: --cp 2: sequence 8190 is not divisible by 2*CP 4\n");
  CHECK(err_of("--model llama3.1-8b --machine h100-server --dp 16 --gbs 16") ==
        "protwin simulate-4d: error: --nodes 2: machine h100-server has no network between nodes (/network or "
        "/collectives/inter_node)\n");
  CHECK(err_of(m + "--gbs 8 --recompute some") ==
        "protwin simulate-4d: error: --recompute some: unknown recompute granularity; expected none, selective or "
        "full\n");
}

TEST_CASE("simulate-4d --framework and the workload switches: JSON config, overrides, bad values", "[cli][4d][switches]") {
  const std::string base = "--model " + kSmall + " --machine dgx-a100 --tp 2 --dp 2 --mbs 1 --gbs 8 --seq 1024 --dtype fp16";
  const auto core = run_protwin("simulate-4d " + base + " --json");
  REQUIRE(core.code == 0);
  const auto c = nlohmann::json::parse(core.out)["config"];
  CHECK(c["sequence_parallel"] == true);
  CHECK(c["dropout"] == false);
  CHECK(c["grad_reduce_bytes"] == 4);
  // The SC'21 code's switches, one of them overridden after the preset.
  const auto lm = run_protwin("simulate-4d " + base + " --framework megatron-lm --dropout off --json");
  REQUIRE(lm.code == 0);
  const auto j = nlohmann::json::parse(lm.out);
  CHECK(j["config"]["sequence_parallel"] == false);
  CHECK(j["config"]["dropout"] == false);
  CHECK(j["config"]["grad_reduce_bytes"] == 2);
  CHECK(j["config"]["vocab_parallel_loss"] == true);
  CHECK(j["config"]["pad_vocab"] == true);
  // Replicated norms and TP all-reduces only add GPU work: without the host thread the iteration cannot get
  // shorter. (With it, this tiny model is host-bound, and sequence parallelism's 6 all-gathers + 4
  // reduce-scatters cost more c10d calls than the 4 all-reduces without it.)
  const auto gpu_only = [&](const std::string& extra) {
    const auto r = run_protwin("simulate-4d " + base + extra + " --no-host-dispatch --json");
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["iteration_s"].get<double>();
  };
  CHECK(gpu_only(" --framework megatron-lm --dropout off") > gpu_only(""));
  CHECK(j["config"]["p2p_sync"] == true);
  CHECK(j["config"]["framework_step"] == true);
  CHECK(j["config"]["fsdp"] == false);
  // FSDP (composer): DP only; the step's own switch overridden after the preset.
  const auto fsdp = run_protwin("simulate-4d --model " + kSmall +
                                " --machine dgx-a100 --dp 4 --mbs 1 --gbs 8 --seq 1024 --framework fsdp --framework-step off --json");
  REQUIRE(fsdp.code == 0);
  const auto f = nlohmann::json::parse(fsdp.out)["config"];
  CHECK(f["fsdp"] == true);
  CHECK(f["framework_step"] == false);
  CHECK(f["grad_reduce_bytes"] == 4);
  // Its memory is FSDP FULL_SHARD's (sim/parallel/estimator/fsdp_estimator.cpp), with the gathered units.
  CHECK(nlohmann::json::parse(fsdp.out)["memory"]["method"] == "fsdp");
  CHECK(nlohmann::json::parse(fsdp.out)["memory"]["fsdp_gathered_GiB"].get<double>() > 0);
  CHECK(err_of(base + " --framework fsdp").find("--framework fsdp: FSDP FULL_SHARD shards over data parallelism only") !=
        std::string::npos);
  CHECK(err_of(base + " --framework megatron-2")
            .find("--framework: expected megatron-core, megatron-lm, megatron-deepspeed or fsdp") != std::string::npos);
  CHECK(err_of(base + " --p2p-sync maybe").find("--p2p-sync: expected on or off, got 'maybe'") != std::string::npos);
  CHECK(err_of(base + " --sequence-parallel yes").find("--sequence-parallel: expected on or off, got 'yes'") !=
        std::string::npos);
  CHECK(err_of(base + " --grad-reduce-dtype int8").find("--grad-reduce-dtype: expected fp32, fp16 or bf16") !=
        std::string::npos);
}
