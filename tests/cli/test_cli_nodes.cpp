// --nodes and long --seq on the offload subcommands: bad combinations exit 2 naming the flag, the
// JSON reports nodes and the global batch, and capacity sizes its ladder's positions to --seq.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/cli/run_protwin.h"

TEST_CASE("bad --nodes and --gpus combinations exit 2 naming the flag, on every offload subcommand") {
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"compare --model gpt2-small --machine a100-server --gpus 6", "--gpus: 6 GPUs requested but a100-server has 4 per node"},
      {"search --model gpt2-small --machine a100-server --gpus 16 --nodes 3",
       "--gpus: 16 GPUs do not spread evenly over --nodes 3"},
      {"sweep --model gpt2-small --machine a100-server --gpus 20 --nodes 4 --set host.cores=12,24",
       "--gpus: 20 GPUs requested but a100-server has 4 per node (--nodes 4)"},
      {"capacity --machine rtx3090-server --nodes 2", "--nodes: 2 nodes of rtx3090-server, but the machine has no inter-node network"},
      {"simulate --model gpt2-small --machine rtx3090-server --gpus 8", "--gpus: 8 GPUs requested but rtx3090-server has 4"},
      {"compare --model gpt2-small --machine a100-server --nodes 0", "--nodes 0: out of range"},
      {"search --model gpt2-10b --machine a100-server --seq 4096", "--seq: 4096 exceeds the 1024 learned positions of model 'gpt2-10b'"},
      {"capacity --machine a100-server --gpus 1 --seq 2000000", "--seq 2000000: out of range"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto r = run_protwin(c.args);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
  // A plan is simulated as it is: --nodes only compiles one.
  const auto r = run_protwin("simulate --plan " + std::string(PROTWIN_SOURCE_DIR) +
                             "/examples/prefetch_pipeline.plan.json --nodes 2");
  CHECK(r.code == 2);
  CHECK(r.err.find("--nodes: only with --model") != std::string::npos);
}

TEST_CASE("compare across nodes reports the nodes, the per-GPU and the global batch") {
  const auto r = run_protwin("compare --model gpt2-1b --machine a100-server --gpus 8 --batch 4 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"] == 8);
  CHECK(j["nodes"] == 2);
  for (const auto& s : j["systems"]) {
    if (s["tokens_per_s"].is_null()) continue;
    CHECK(s["batch"] == 4);
    CHECK(s["global_batch"] == 32);
    // tokens/s counts every GPU's tokens: global batch x sequence / iteration.
    CHECK(s["tokens_per_s"].get<double>() == Approx(32.0 * 1024 / s["iteration_s"].get<double>()));
  }
  // The same GPUs named by --nodes give the same answer.
  const auto n = run_protwin("compare --model gpt2-1b --machine a100-server --nodes 2 --batch 4 --json");
  REQUIRE(n.code == 0);
  CHECK(nlohmann::json::parse(n.out)["systems"] == j["systems"]);
}

TEST_CASE("capacity --seq sizes the ladder's learned positions to the sequence") {
  // DDP keeps everything on the GPU, so its capacity falls as the activations grow with --seq
  // (on one RTX 3090: hidden 8192 x 1 layer at 1024, hidden 4096 x 3 layers at 8192).
  const auto a = run_protwin("capacity --machine rtx3090-server --gpus 1 --systems ddp --json");
  const auto b = run_protwin("capacity --machine rtx3090-server --gpus 1 --systems ddp --seq 8192 --json");
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja["seq"] == 1024);
  CHECK(jb["seq"] == 8192);
  const auto& s = jb["systems"][0];
  CHECK(s["max_params"].get<int64_t>() < ja["systems"][0]["max_params"].get<int64_t>());
  // GPT-2 parameters in closed form: tied V x h embedding, 8192 x h positions, per layer
  // 12h^2 + 13h (attention and MLP weights and biases, two LayerNorms), the final LayerNorm 2h.
  const int64_t h = s["hidden"], L = s["layers"];
  CHECK(s["max_params"].get<int64_t>() == 50257 * h + 8192 * h + L * (12 * h * h + 13 * h) + 2 * h);
}

TEST_CASE("simulate --model and sweep take --nodes: the plan and the sweep carry the placement") {
  const std::string plan = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/nodes_plan" + std::to_string(::getpid()) + ".json";
  auto r = run_protwin("simulate --model gpt2-small --machine a100-server --gpus 8 --batch 2 --plan-out " + plan + " --json");
  REQUIRE(r.code == 0);
  const auto p = nlohmann::json::parse(slurp(plan));
  std::remove(plan.c_str());
  CHECK(p["meta"]["gpus"] == 8);
  CHECK(p["meta"]["nodes"] == 2);
  int collectives = 0;
  for (const auto& op : p["ops"]) {
    if (op["kind"] != "all_gather" && op["kind"] != "reduce_scatter") continue;
    ++collectives;
    CHECK(op["group"]["ranks"] == 8);
    CHECK(op["group"]["ranks_per_node"] == 4);
  }
  CHECK(collectives > 0);
  r = run_protwin("sweep --model gpt2-small --machine a100-server --nodes 2 --set host.cores=56,112 --json");
  REQUIRE(r.code == 0);
  const auto s = nlohmann::json::parse(r.out);
  CHECK(s["gpus"] == 8);
  CHECK(s["nodes"] == 2);
}
