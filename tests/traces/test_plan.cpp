// Plan IR v4: round trip and validate(), with the exact message for each bad input.
#include <catch2/catch.hpp>

#include <cstdio>

#include "tests/traces/plan_fixtures.h"
#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/plan.h"
#include "traces/plan_placement.h"

using namespace protwin::traces;

namespace {
Plan parse(const nlohmann::json& j) { return plan_from_json(j, "p.json"); }
std::string validate_error(const nlohmann::json& j) {
  try {
    validate(parse(j));
  } catch (const protwin::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("a valid plan parses, round-trips and validates with the expected high-water") {
  Plan p = parse(small_plan_json());
  REQUIRE(p.ops.size() == 3);
  REQUIRE(p.pools.size() == 2);
  REQUIRE(p.chunks[0].params[0].shape == std::vector<int64_t>{10, 20});
  // Round trip: write then read gives the same JSON.
  REQUIRE(plan_to_json(parse(plan_to_json(p))) == plan_to_json(p));
  ValidationResult v = validate(p);
  // Oracle: 100 initial + 400 upload + 300 transient = 800 bytes on gpu, at op 1.
  REQUIRE(v.pools[0].high_water.n == 800);
  REQUIRE(v.pools[0].op_at_high_water == 1);
  REQUIRE(v.pools[1].high_water.n == 400);
}

TEST_CASE("wrong format or version is refused with the pointer and the command that recompiles the plan") {
  auto j = small_plan_json();
  j["format"] = "protwin.report";
  REQUIRE_THROWS_WITH(parse(j), "p.json:/format: expected \"protwin.plan\", got \"protwin.report\"");
  const std::string hint = "\nhint: recompile the plan with this protwin: protwin simulate --model M --machine H "
                           "--policy knobs.json --plan-out plan.json (the old plan's meta names its model, machine "
                           "and knobs), or protwin search --model M --machine H -o plan.json";
  for (int version : {1, 3, 5}) {
    j = small_plan_json();
    j["version"] = version;
    REQUIRE_THROWS_WITH(parse(j), "p.json:/version: unsupported plan version " + std::to_string(version) +
                                      " (this protwin reads version 4)" + hint);
  }
}

TEST_CASE("plan kernel sets: listed once, ops name theirs by index, never in attrs") {
  auto j = small_plan_json();
  const nlohmann::json gemm = {{"kind", "gemm"}, {"shape", {64, 64, 64}}, {"dtype", "fp16"}, {"count", 2}};
  j["kernel_sets"] = {{gemm}};
  j["ops"][1]["kernels"] = 0;
  j["ops"][1]["attrs"] = {{"block", "layer.0"}};
  j["ops"][2]["kernels"] = 0;  // two ops share a set
  const Plan p = parse(j);
  REQUIRE(p.kernel_sets.size() == 1);
  CHECK(p.ops[1].kernels == 0);
  CHECK(p.ops[2].kernels == 0);
  CHECK(p.ops[0].kernels == -1);
  CHECK(p.kernels_of(p.ops[1])[0].count == 2);
  CHECK(p.kernels_of(p.ops[1])[0].sig.shape == std::vector<int64_t>{64, 64, 64});
  CHECK(p.kernels_of(p.ops[0]).empty());
  CHECK(p.ops[1].attrs == nlohmann::json({{"block", "layer.0"}}));
  const nlohmann::json out = plan_to_json(p);
  CHECK(out["version"] == 4);
  CHECK(out["kernel_sets"].size() == 1);
  CHECK(out["ops"][1]["kernels"] == 0);
  const Plan back = parse(out);
  CHECK(back.kernel_sets == p.kernel_sets);
  CHECK(plan_to_json(back) == out);
  // Refused by pointer: kernels in attrs (where versions 1 and 2 had them), a set that does not
  // exist, and a bad kernel.
  nlohmann::json bad = out;
  bad["ops"][1]["attrs"]["kernels"] = {gemm};
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/1/attrs/kernels: a version-4 op says it as a typed field, not in attrs");
  bad = out;
  bad["ops"][1]["kernels"] = 1;
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/1/kernels:"));
  bad = out;
  bad["kernel_sets"][0][0]["dtype"] = "fp12";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/kernel_sets/0/0/dtype:"));
  // A plan built in memory naming a missing set is refused by validate.
  Plan mem = back;
  mem.source.clear();
  mem.ops[2].kernels = 3;
  REQUIRE_THROWS_WITH(validate(mem), Catch::Contains("kernel set 3 does not exist"));
}

TEST_CASE("plan chunks say where they live and where their optimizer runs") {
  auto j = small_plan_json();
  REQUIRE_NOTHROW(parse(j));  // a hand-written plan, chunks without the fields
  j["chunks"] = {{{"id", 0}, {"bytes", 64}, {"resident", false}, {"optimizer", "host"}}};
  const Plan p = parse(j);
  REQUIRE(p.chunks.size() == 1);
  CHECK(p.chunks[0].resident == std::optional<bool>(false));
  CHECK(p.chunks[0].optimizer == "host");
  CHECK(plan_to_json(p)["chunks"][0]["resident"] == false);
  j["chunks"][0]["optimizer"] = "gpu";
  REQUIRE_THROWS_WITH(parse(j), "p.json:/chunks/0/optimizer: expected \"device\" or \"host\", got \"gpu\"");
  j["chunks"][0]["optimizer"] = "device";
  j["chunks"][0]["resident"] = 1;
  REQUIRE_THROWS_WITH(parse(j), Catch::Contains("p.json:/chunks/0/resident"));
}

TEST_CASE("plan copies and collectives say pinned and their group as typed fields, never in attrs") {
  auto j = small_plan_json();
  j["ops"][0]["pinned"] = false;
  j["ops"][2]["group"] = {{"ranks", 16}, {"ranks_per_node", 8}, {"groups_per_node", 1}, {"scope", "inter_node"}};
  const Plan p = parse(j);
  CHECK(p.ops[0].pinned == std::optional<bool>(false));
  CHECK_FALSE(p.ops[1].pinned.has_value());
  const CollectiveGroup& g = p.ops[2].group;
  CHECK((g.ranks == 16 && g.ranks_per_node == 8 && g.groups_per_node == 1 && g.inter_node));
  const nlohmann::json out = plan_to_json(p);
  CHECK(out["ops"][0]["pinned"] == false);
  CHECK(out["ops"][2]["group"] == j["ops"][2]["group"]);
  CHECK(plan_to_json(parse(out)) == out);
  nlohmann::json bad = out;
  bad["ops"][2]["group"]["scope"] = "rack";
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/2/group/scope: expected \"intra_node\" or \"inter_node\", got \"rack\"");
  bad = out;
  bad["ops"][2]["group"]["ranks"] = -2;
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/2/group/ranks"));
  bad = out;
  bad["ops"][0]["pinned"] = "yes";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/0/pinned"));
  for (const char* key : {"pinned", "ranks", "ranks_per_node", "groups_per_node", "scope"}) {
    bad = out;
    bad["ops"][0]["attrs"] = {{key, 1}};
    REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/0/attrs/" + std::string(key) +
                                        ": a version-4 op says it as a typed field, not in attrs");
  }
}

TEST_CASE("plan sub-kinds, host work and the plan's ranks, nodes and dtype are typed fields, never in attrs") {
  auto j = small_plan_json();
  j["meta"]["gpus"] = 8;
  j["meta"]["nodes"] = 2;
  j["meta"]["dtype"] = "bf16";
  j["ops"][0]["sub_kind"] = "param_chunk";
  j["ops"][0]["host"] = {{"copies", 3}, {"sync", true}};
  j["ops"][0]["attrs"] = {{"phase", "forward"}};
  j["ops"][1]["host"] = {{"hooks", 4}, {"eager_ops", 2}};
  j["ops"][1]["host_sync"] = true;
  const Plan p = parse(j);
  CHECK((p.gpus == 8 && p.nodes == 2 && p.dtype == "bf16"));
  CHECK_FALSE(p.meta.contains("gpus"));  // the typed fields are the only copy
  CHECK(p.ranks_per_host(8) == 4);
  CHECK(p.ops[0].sub_kind == OpSubKind::kParamChunk);
  CHECK((p.ops[0].host.copies == 3 && p.ops[0].host_sync));
  CHECK(p.ops[0].attrs == nlohmann::json({{"phase", "forward"}}));  // descriptions stay
  CHECK((p.ops[1].host.hooks == 4 && p.ops[1].host.eager_ops == 2 && p.ops[1].host_sync));
  const nlohmann::json out = plan_to_json(p);
  CHECK(out["version"] == 4);
  CHECK(out["meta"]["gpus"] == 8);
  CHECK(out["meta"]["dtype"] == "bf16");
  CHECK(out["ops"][0]["sub_kind"] == "param_chunk");
  CHECK(out["ops"][0]["host"] == nlohmann::json({{"copies", 3}}));
  CHECK(out["ops"][0]["host_sync"] == true);
  CHECK(out["ops"][1]["host_sync"] == true);
  CHECK(plan_to_json(parse(out)) == out);
  // A sub-kind must be one of its kind's; an op's attrs may not say typed fields.
  nlohmann::json bad = out;
  bad["ops"][0]["sub_kind"] = "overflow_scan";
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/0/sub_kind: \"overflow_scan\" is not a sub-kind of h2d; expected one of "
                                  "param_chunk, activation, updated_params, grad_roundtrip");
  for (const char* key : {"host_sync", "host", "launches", "bytes_per_param", "impl"}) {
    bad = out;
    bad["ops"][1]["attrs"][key] = true;
    REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/1/attrs/" + std::string(key) +
                                        ": a version-4 op says it as a typed field, not in attrs");
  }
  bad = out;
  bad["ops"][0]["attrs"]["what"] = "param_chunk";
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/0/attrs/what: a version-4 op says what it moves as \"sub_kind\"");
  bad = out;
  bad["ops"][1]["attrs"]["what"] = "a description";  // only a copy's or a host pass's "what" was its sub-kind
  CHECK(parse(bad).ops[1].attrs["what"] == "a description");
  bad = out;
  bad["ops"][0]["host"]["hook"] = 2;  // a misspelt count is refused, not read as none
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/0/host: unknown field \"hook\""));
  bad = out;
  bad["meta"]["gpus"] = "eight";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/meta/gpus: expected an integer"));
  bad = out;
  bad["ops"][1]["attrs"]["dtype"] = "fp32";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/1/attrs/dtype: an op's work is priced in the plan's dtype"));
  // CPU Adam's implementation: none (the SIMD CPU Adam) or the sub-kind "torch".
  j = small_plan_json();
  j["ops"][2]["kind"] = "adam_cpu";
  CHECK(parse(j).ops[2].sub_kind == OpSubKind::kNone);
  j["ops"][2]["sub_kind"] = "torch";
  CHECK(parse(j).ops[2].sub_kind == OpSubKind::kTorch);
}

TEST_CASE("unknown stream") {
  auto j = small_plan_json();
  j["ops"][1]["stream"] = "gpu0";
  REQUIRE(validate_error(j) == "p.json:/ops/1 (forward, stream gpu0): unknown stream \"gpu0\"");
}

TEST_CASE("unknown tensor") {
  auto j = small_plan_json();
  j["ops"][1]["reads"] = {7};
  REQUIRE(validate_error(j) == "p.json:/ops/1 (forward, stream compute): reads unknown tensor 7");
}

TEST_CASE("dependency cycle") {
  auto j = small_plan_json();
  j["ops"][0]["deps"] = {2};
  REQUIRE(validate_error(j) ==
          "p.json:/ops/0 (h2d, stream h2d): dependency cycle through op 2 (ops may only depend on earlier ops)");
}

TEST_CASE("negative bytes") {
  auto j = small_plan_json();
  j["tensors"][0]["bytes"] = -5;
  REQUIRE_THROWS_WITH(parse(j), "p.json:/tensors/0/bytes: expected an integer >= 0, got integer -5");
  j = small_plan_json();
  j["ops"][0]["work"]["bytes"] = -1;
  REQUIRE_THROWS_WITH(parse(j), "p.json:/ops/0/work/bytes: expected an integer >= 0, got integer -1");
}

TEST_CASE("pool over capacity names the op and the pool") {
  auto j = small_plan_json();
  j["ops"][1]["mem"][0]["delta_bytes"] = 600;
  j["ops"][1]["mem"][1]["delta_bytes"] = -600;
  REQUIRE(validate_error(j) ==
          "p.json:/ops/1 (forward, stream compute): pool gpu over capacity: 1100 bytes needed, capacity 1000\n"
          "hint: the plan does not fit this machine; offload more or shrink the batch");
}

TEST_CASE("a tensor read where it is not resident") {
  auto j = small_plan_json();
  j["ops"][0]["mem"][0].erase("tensor");  // the upload no longer makes chunk0.gpu resident
  REQUIRE(validate_error(j) ==
          "p.json:/ops/1 (forward, stream compute): reads tensor 1 (chunk0.gpu) which is not resident in gpu");
}

TEST_CASE("op ids must be dense, in order and topologically ordered") {
  auto j = small_plan_json();
  j["ops"][2]["id"] = 5;
  REQUIRE_THROWS_WITH(parse(j), "p.json:/ops/2/id: op ids must be dense and in order: expected 2, got 5");
  j = small_plan_json();
  j["ops"][0]["deps"] = {1};
  j["ops"][1]["deps"] = nlohmann::json::array();
  REQUIRE(validate_error(j) ==
          "p.json:/ops/0 (h2d, stream h2d): depends on later op 1 (op ids must be topologically ordered)");
}

TEST_CASE("memory effect on an unknown pool and a bad 'at'") {
  auto j = small_plan_json();
  j["ops"][1]["mem"][0]["pool"] = "hbm";
  REQUIRE(validate_error(j) == "p.json:/ops/1 (forward, stream compute): memory effect on unknown pool \"hbm\"");
  j = small_plan_json();
  j["ops"][1]["mem"][0]["at"] = "middle";
  REQUIRE_THROWS_WITH(parse(j), "p.json:/ops/1/mem/0/at: expected \"start\" or \"end\", got \"middle\"");
}

TEST_CASE("write_plan streams the ops: the same bytes as plan_to_json(plan).dump(1), with and without ops") {
  Plan p = parse(small_plan_json());
  const std::string path = std::string(PROTWIN_BINARY_DIR) + "/tests/traces/streamed.plan.json";
  for (int with_ops = 1; with_ops >= 0; --with_ops) {
    if (!with_ops) p.ops.clear();
    write_plan(p, path);
    REQUIRE(protwin::traces::read_file(path) == plan_to_json(p).dump(1) + "\n");
  }
  std::remove(path.c_str());
}

TEST_CASE("layer keeps come from the ops: a recompute checkpoints its layer, a d2h of an activation swaps it") {
  Plan p;
  p.tensors.resize(2);
  p.tensors[0].kind = TensorKind::kActivation;
  p.tensors[1].kind = TensorKind::kGradChunk;
  auto add = [&p](OpKind kind, int block, std::vector<int> reads) {
    Op op;
    op.id = static_cast<int>(p.ops.size());
    op.kind = kind;
    op.block = block;
    op.reads = std::move(reads);
    p.ops.push_back(op);
  };
  add(OpKind::kRecompute, 1, {});
  add(OpKind::kD2H, 2, {0});
  add(OpKind::kD2H, 3, {1});  // a gradient's copy: the layer keeps its activations
  CHECK(layer_keeps(p, 3) == std::vector<LayerKeep>{LayerKeep::kInput, LayerKeep::kSwapped, LayerKeep::kAll});
  CHECK_THROWS_WITH(layer_keeps(p, 1), Catch::Contains("activation copy of block 2, which is not a decoder layer"));
  add(OpKind::kRecompute, 2, {});
  CHECK_THROWS_WITH(layer_keeps(p, 3), Catch::Contains("block 2 is both recomputed and swapped"));
}

TEST_CASE("chunk placement: the chunks' own fields, else refused with the command that recompiles the plan") {
  Plan p;
  p.chunks.resize(2);
  p.chunks[0].resident = true;
  p.chunks[0].optimizer = "host";
  p.chunks[1].resident = true;
  p.chunks[1].optimizer = "device";
  const auto placed = chunk_placement(p, "p.json");
  REQUIRE(placed.size() == 2);
  CHECK((placed[0].resident && !placed[0].device_optimizer));
  CHECK((placed[1].resident && placed[1].device_optimizer));
  p.chunks[1].resident = false;
  CHECK_THROWS_WITH(chunk_placement(p, "p.json"),
                    Catch::StartsWith("p.json:/chunks/1/optimizer: \"device\" needs \"resident\": true"));
  p.chunks[1].optimizer = "host";
  CHECK(!chunk_placement(p, "p.json")[1].resident);
  p.meta["knobs"] = {{"offload", false}};  // the knobs that made a plan are not read
  p.chunks[0].optimizer.clear();
  CHECK_THROWS_WITH(chunk_placement(p, "p.json"),
                    Catch::StartsWith("p.json:/chunks/0: no \"resident\" and \"optimizer\"") &&
                        Catch::Contains("hint: recompile the plan with this protwin: protwin simulate --model M"));
}
