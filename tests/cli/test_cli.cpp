// The CLI contract of DESIGN §8: --help, exit codes 0 / 2, errors that name the file or flag.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

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

TEST_CASE("validate and simulate the example plan, the report file equals what --json summarises") {
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

TEST_CASE("search: JSON contract, and a model that fits nowhere exits 2 with what it would need") {
  auto r = run_protwin("search --model gpt2-small --machine rtx3090-server --gpus 1 --batch 2 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"system", "model", "machine", "gpus", "batch", "knobs", "tokens_per_s", "iteration_s",
                        "peak_gpu_bytes", "peak_pinned_bytes", "peak_pageable_bytes"})
    REQUIRE(j.contains(k));
  REQUIRE(j["batch"] == 2);
  REQUIRE(j["tokens_per_s"].get<double>() == Approx(2 * 1024 / j["iteration_s"].get<double>()));
  r = run_protwin("search --model gpt3-175b --machine rtx3090-server --gpus 1 --batch 1");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("does not fit on rtx3090-server with 1 GPU(s) under any protrain knob setting") != std::string::npos);
  REQUIRE(r.err.find("of GPU memory (the GPU has") != std::string::npos);
  // With --json a model that does not fit is a result, not an error: fits false, what it needs.
  r = run_protwin("search --model gpt3-175b --machine rtx3090-server --gpus 1 --batch 1 --json");
  REQUIRE(r.code == 0);
  const auto n = nlohmann::json::parse(r.out);
  REQUIRE(n["fits"] == false);
  REQUIRE(n["tokens_per_s"].is_null());
  // The closest setting needs more than the GPU or the host has; each pool's least need (over
  // all settings) is at most the closest setting's. Here neither pool alone rules the model out
  // (all-persistent settings need little host memory, all-offloaded ones little GPU memory).
  REQUIRE((n["closest_needs"]["gpu_bytes"].get<int64_t>() > n["capacity"]["gpu_bytes"].get<int64_t>() ||
           n["closest_needs"]["host_bytes"].get<int64_t>() > n["capacity"]["host_bytes"].get<int64_t>()));
  REQUIRE(n["least_gpu_bytes"].get<int64_t>() <= n["closest_needs"]["gpu_bytes"].get<int64_t>());
  REQUIRE(n["least_host_bytes"].get<int64_t>() <= n["closest_needs"]["host_bytes"].get<int64_t>());
  REQUIRE(n["least_gpu_bytes"].get<int64_t>() < n["capacity"]["gpu_bytes"].get<int64_t>());
}

TEST_CASE("bad knobs, batch and system exit 2 naming the knob or flag") {
  const std::string knobs = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/knobs_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream(knobs) << R"({"n_persist": 99})";
  }
  auto r = run_protwin("simulate --model gpt2-small --machine rtx3090-server --policy " + knobs);
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("knob n_persist=99: valid range is [0, ") != std::string::npos);
  std::remove(knobs.c_str());
  r = run_protwin("search --model gpt2-small --batch 0");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("--batch: expected a positive integer or 'auto', got '0'") != std::string::npos);
  r = run_protwin("compare --model gpt2-small --gpus 9");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("--gpus: 9 GPUs requested but rtx3090-server has 4") != std::string::npos);
  r = run_protwin("search --system megatron");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("--system: unknown system 'megatron'; known systems: protrain, deepspeed") != std::string::npos);
  r = run_protwin("search --model llama-13b --hf-eager");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("--hf-eager: HuggingFace's eager kernels are modelled for the GPT-2 family only") != std::string::npos);
  r = run_protwin("simulate --model gpt2-small --machine rtx3090-server --gpus 1 --knob pinned_alloc=pow2");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("--knob pinned_alloc=pow2:/pinned_alloc: expected one of exact, torch_per_chunk, torch_flat, got \"pow2\"") !=
          std::string::npos);
}

TEST_CASE("without offload (DDP) the buffer count does not apply, whatever the model's chunk count") {
  // A one-layer model packs into one chunk; DDP keeps it resident, so n_buffer's range of the
  // offloading systems must not refuse it.
  const auto r = run_protwin("simulate --model gpt:hidden=256,layers=1,heads=4,vocab=64 --machine rtx3090-server "
                             "--gpus 1 --knob system=ddp --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["iteration_s"].get<double>() > 0);
}

TEST_CASE("compare lists every system, capacity names the largest model per system") {
  auto r = run_protwin("compare --model gpt2-1b --machine a100-server --gpus 2 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& s : j["systems"]) names.push_back(s["name"]);
  REQUIRE(names == std::vector<std::string>{"protrain", "deepspeed", "zero-offload", "colossalai", "fsdp", "ddp"});
  // The table's host/rank column is the JSON's pinned + pageable peak, in GiB.
  const auto& ds = j["systems"][1];
  char host[64];
  std::snprintf(host, sizeof host, "%.2f GiB",
                static_cast<double>(ds["peak_pinned_bytes"].get<int64_t>() + ds["peak_pageable_bytes"].get<int64_t>()) /
                    (1024.0 * 1024 * 1024));
  r = run_protwin("compare --model gpt2-1b --machine a100-server --gpus 2");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("host/rank") != std::string::npos);
  CHECK(r.out.find(host) != std::string::npos);
  r = run_protwin("capacity --machine rtx3090-server --gpus 1 --systems protrain,ddp --json");
  REQUIRE(r.code == 0);
  const auto c = nlohmann::json::parse(r.out);
  REQUIRE(c["systems"][0]["name"] == "protrain");
  REQUIRE(c["systems"][0]["max_params"].get<int64_t>() > c["systems"][1]["max_params"].get<int64_t>());
  // One layer more does not fit, and the pool that stops it is named: DDP keeps everything on the
  // GPU, so GPU memory alone stops it.
  const auto& next = c["systems"][1]["next_size"];
  REQUIRE(next["layers"] == c["systems"][1]["layers"].get<int64_t>() + 1);
  REQUIRE(next["limited_by"] == "gpu memory");
  // capacity chooses the model and the batch itself: given ones are refused, not ignored.
  r = run_protwin("capacity --machine rtx3090-server --gpus 1 --batch 4");
  REQUIRE(r.code == 2);
  CHECK(r.err.find("--batch: capacity scales the gpt2 family (layers at hidden 4096 and 8192) at batch 1") !=
        std::string::npos);
  r = run_protwin("capacity --machine rtx3090-server --gpus 1 --model gpt2-1b");
  REQUIRE(r.code == 2);
  CHECK(r.err.find("--model: capacity scales the gpt2 family") != std::string::npos);
  r = run_protwin("capacity --machine rtx3090-server --gpus 1 --systems protrain,");
  REQUIRE(r.code == 2);
  CHECK(r.err.find("--systems protrain,: unknown system ''; known systems: protrain, deepspeed") != std::string::npos);
}

TEST_CASE("simulate --model --knob: the same plan as search's best, with throughput and time split") {
  const auto s = nlohmann::json::parse(
      run_protwin("search --model gpt2-1b --machine rtx3090-server --gpus 2 --batch 4 --json").out);
  const auto& k = s["knobs"];
  std::string knobs;
  for (const char* name : {"n_persist", "n_buffer", "n_swap", "n_checkpoint", "chunk_bytes", "swap_spacing"})
    knobs += std::string(" --knob ") + name + "=" + std::to_string(k[name].get<int64_t>());
  const auto r = run_protwin("simulate --model gpt2-1b --machine rtx3090-server --gpus 2 --batch 4 --json" + knobs);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["iteration_s"].get<double>() == Approx(s["iteration_s"].get<double>()).epsilon(1e-12));
  CHECK(j["tokens_per_s"].get<double>() == Approx(4 * 1024 * 2 / j["iteration_s"].get<double>()));
  CHECK(j["forward_s"].get<double>() + j["backward_s"].get<double>() + j["exposed_optimizer_s"].get<double>() ==
        Approx(j["iteration_s"].get<double>()));
  CHECK(s["chunks"].get<int64_t>() > 0);
  auto bad = run_protwin("simulate --model gpt2-1b --machine rtx3090-server --knob n_persist");
  CHECK(bad.code == 2);
  CHECK(bad.err == "protwin simulate: error: --knob 'n_persist': expected name=value\n");
  bad = run_protwin("simulate --model gpt2-1b --machine rtx3090-server --knob n_persist=999");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("knob n_persist=999: valid range is [0, ") != std::string::npos);
}
