// Plan IR v1: round trip and validate(), with the exact message for each bad input.
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
  REQUIRE(v.topological_order == std::vector<int>{0, 1, 2});
}

TEST_CASE("wrong format or version is refused with the pointer") {
  auto j = small_plan_json();
  j["format"] = "protwin.report";
  REQUIRE_THROWS_WITH(parse(j), "p.json:/format: expected \"protwin.plan\", got \"protwin.report\"");
  j = small_plan_json();
  j["version"] = 5;
  REQUIRE_THROWS_WITH(parse(j), "p.json:/version: unsupported plan version 5 (this protwin reads versions 1 to 4)");
}

TEST_CASE("plan version 3: kernel sets listed once, ops name theirs, and older ops' attrs.kernels move into the table") {
  auto j = small_plan_json();
  const nlohmann::json gemm = {{"kind", "gemm"}, {"shape", {64, 64, 64}}, {"dtype", "fp16"}, {"count", 2}};
  j["version"] = 2;
  j["ops"][1]["attrs"] = {{"kernels", {gemm}}, {"block", "layer.0"}};
  j["ops"][2]["attrs"] = {{"kernels", {gemm}}};  // an equal set is shared
  const Plan old = parse(j);
  REQUIRE(old.kernel_sets.size() == 1);
  CHECK(old.ops[1].kernels == 0);
  CHECK(old.ops[2].kernels == 0);
  CHECK(old.ops[0].kernels == -1);
  CHECK(old.kernels_of(old.ops[1])[0].count == 2);
  CHECK(old.kernels_of(old.ops[0]).empty());
  CHECK(old.ops[1].attrs == nlohmann::json({{"block", "layer.0"}}));
  const nlohmann::json v3 = plan_to_json(old);
  CHECK(v3["version"] == 4);
  CHECK(v3["kernel_sets"].size() == 1);
  CHECK(v3["ops"][1]["kernels"] == 0);
  const Plan back = parse(v3);
  CHECK(back.kernel_sets == old.kernel_sets);
  CHECK(plan_to_json(back) == v3);
  // Version 3 refuses kernels in attrs, a set that does not exist, and a bad kernel, by pointer.
  nlohmann::json bad = v3;
  bad["ops"][1]["attrs"]["kernels"] = {gemm};
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/1/attrs/kernels: a version-3 op names its kernels by index"));
  bad = v3;
  bad["ops"][1]["kernels"] = 1;
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/1/kernels:"));
  bad = v3;
  bad["kernel_sets"][0][0]["dtype"] = "fp12";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/kernel_sets/0/0/dtype:"));
  // A plan built in memory naming a missing set is refused by validate.
  Plan mem = back;
  mem.source.clear();
  mem.ops[2].kernels = 3;
  REQUIRE_THROWS_WITH(validate(mem), Catch::Contains("kernel set 3 does not exist"));
}

TEST_CASE("plan version 2: chunks say where they live and where their optimizer runs, and version 1 still reads") {
  auto j = small_plan_json();
  j["version"] = 1;
  REQUIRE_NOTHROW(parse(j));  // a version-1 file, chunks without the fields
  j["version"] = 2;
  j["chunks"] = {{{"id", 0}, {"bytes", 64}, {"resident", false}, {"optimizer", "host"}}};
  const Plan p = parse(j);
  REQUIRE(p.chunks.size() == 1);
  CHECK(p.chunks[0].resident == std::optional<bool>(false));
  CHECK(p.chunks[0].optimizer == "host");
  CHECK(plan_to_json(p)["chunks"][0]["resident"] == false);
  CHECK(plan_to_json(p)["version"] == 4);
  j["chunks"][0]["optimizer"] = "gpu";
  REQUIRE_THROWS_WITH(parse(j), "p.json:/chunks/0/optimizer: expected \"device\" or \"host\", got \"gpu\"");
  j["chunks"][0]["optimizer"] = "device";
  j["chunks"][0]["resident"] = 1;
  REQUIRE_THROWS_WITH(parse(j), Catch::Contains("p.json:/chunks/0/resident"));
}

TEST_CASE("plan version 3: copies and collectives say pinned and their group as typed fields, older attrs move there") {
  auto j = small_plan_json();
  j["version"] = 2;
  j["ops"][0]["attrs"] = {{"pinned", false}, {"what", "param_chunk"}};
  j["ops"][2]["attrs"] = {{"ranks", 16}, {"ranks_per_node", 8}, {"groups_per_node", 1}, {"scope", "inter_node"}};
  const Plan old = parse(j);
  CHECK(old.ops[0].pinned == std::optional<bool>(false));
  CHECK(old.ops[0].sub_kind == OpSubKind::kParamChunk);  // version 4: attrs.what is the typed sub-kind
  CHECK(old.ops[0].attrs.empty());
  CHECK_FALSE(old.ops[1].pinned.has_value());
  const CollectiveGroup& g = old.ops[2].group;
  CHECK((g.ranks == 16 && g.ranks_per_node == 8 && g.groups_per_node == 1 && g.inter_node));
  CHECK(old.ops[2].attrs.empty());
  const nlohmann::json v3 = plan_to_json(old);
  CHECK(v3["ops"][0]["pinned"] == false);
  CHECK(v3["ops"][2]["group"] ==
        nlohmann::json({{"ranks", 16}, {"ranks_per_node", 8}, {"groups_per_node", 1}, {"scope", "inter_node"}}));
  CHECK(plan_to_json(parse(v3)) == v3);
  nlohmann::json bad = v3;
  bad["ops"][2]["group"]["scope"] = "rack";
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/2/group/scope: expected \"intra_node\" or \"inter_node\", got \"rack\"");
  bad = v3;
  bad["ops"][2]["group"]["ranks"] = -2;
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/2/group/ranks"));
  bad = v3;
  bad["ops"][0]["pinned"] = "yes";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/0/pinned"));
}

TEST_CASE("plan version 4: sub-kinds, host work and the plan's ranks, nodes and dtype are typed, and older attrs and meta move there") {
  auto j = small_plan_json();
  j["version"] = 3;
  j["meta"]["gpus"] = 8;
  j["meta"]["nodes"] = 2;
  j["meta"]["dtype"] = "bf16";
  j["ops"][0]["attrs"] = {{"what", "param_chunk"}, {"phase", "forward"}, {"host", {{"copies", 3}, {"sync", true}}}};
  j["ops"][1]["attrs"] = {{"block", "layers.0"}, {"host", {{"hooks", 4}, {"eager_ops", 2}}}, {"host_sync", true}};
  const Plan old = parse(j);
  CHECK((old.gpus == 8 && old.nodes == 2 && old.dtype == "bf16"));
  CHECK_FALSE(old.meta.contains("gpus"));  // the typed fields are the only copy
  CHECK(old.ranks_per_host(8) == 4);
  CHECK(old.ops[0].sub_kind == OpSubKind::kParamChunk);
  CHECK((old.ops[0].host.copies == 3 && old.ops[0].host_sync));
  CHECK(old.ops[0].attrs == nlohmann::json({{"phase", "forward"}}));  // descriptions stay
  CHECK((old.ops[1].host.hooks == 4 && old.ops[1].host.eager_ops == 2 && old.ops[1].host_sync));
  const nlohmann::json v4 = plan_to_json(old);
  CHECK(v4["version"] == 4);
  CHECK(v4["meta"]["gpus"] == 8);
  CHECK(v4["meta"]["dtype"] == "bf16");
  CHECK(v4["ops"][0]["sub_kind"] == "param_chunk");
  CHECK(v4["ops"][0]["host"] == nlohmann::json({{"copies", 3}}));
  CHECK(v4["ops"][1]["host_sync"] == true);
  CHECK(plan_to_json(parse(v4)) == v4);
  // A sub-kind must be one of its kind's; a version-4 op's attrs may not say typed fields.
  nlohmann::json bad = v4;
  bad["ops"][0]["sub_kind"] = "overflow_scan";
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/0/sub_kind: \"overflow_scan\" is not a sub-kind of h2d; expected one of "
                                  "param_chunk, activation, updated_params, grad_roundtrip");
  bad = v4;
  bad["ops"][1]["attrs"]["host_sync"] = true;
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/1/attrs/host_sync: a version-4 op says it as a typed field"));
  bad = v4;
  bad["ops"][0]["attrs"]["what"] = "param_chunk";
  REQUIRE_THROWS_WITH(parse(bad), "p.json:/ops/0/attrs/what: a version-4 op says what it moves as \"sub_kind\"");
  bad = v4;
  bad["ops"][0]["host"]["hook"] = 2;  // a misspelt count is refused, not read as none
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/0/host: unknown field \"hook\""));
  bad = v4;
  bad["meta"]["gpus"] = "eight";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/meta/gpus: expected an integer"));
  bad = v4;
  bad["ops"][1]["attrs"]["dtype"] = "fp32";
  REQUIRE_THROWS_WITH(parse(bad), Catch::StartsWith("p.json:/ops/1/attrs/dtype: an op's work is priced in the plan's dtype"));
  // Version 3's CPU Adam implementation: "simd" is the default, "torch" the sub-kind.
  j = small_plan_json();
  j["version"] = 3;
  j["ops"][2]["kind"] = "adam_cpu";
  j["ops"][2]["attrs"] = {{"impl", "torch"}};
  CHECK(parse(j).ops[2].sub_kind == OpSubKind::kTorch);
  j["ops"][2]["attrs"] = {{"impl", "simd"}};
  CHECK(parse(j).ops[2].sub_kind == OpSubKind::kNone);
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

TEST_CASE("chunk placement: the chunks' own fields, else a version-1 plan's knobs, else refused") {
  Plan p;
  p.chunks.resize(3);
  p.meta["knobs"] = {{"offload", true}, {"n_persist", 1}, {"persistent_gpu_adam", false}};
  auto placed = chunk_placement(p, "v1.json");  // version 1: the first n_persist chunks stay, host Adam
  REQUIRE(placed.size() == 3);
  CHECK((placed[0].resident && !placed[0].device_optimizer));
  CHECK((!placed[1].resident && !placed[2].device_optimizer));
  p.chunks[1].resident = true;
  p.chunks[1].optimizer = "device";
  placed = chunk_placement(p, "v2.json");  // a chunk's own fields win over the knobs
  CHECK((placed[1].resident && placed[1].device_optimizer));
  p.chunks[1].resident = false;
  CHECK_THROWS_WITH(chunk_placement(p, "v2.json"),
                    Catch::StartsWith("v2.json:/chunks/1/optimizer: \"device\" needs \"resident\": true"));
  p.chunks[1].optimizer = "host";
  p.meta["knobs"]["n_persist"] = "one";
  CHECK_THROWS_WITH(chunk_placement(p, "v1.json"), Catch::StartsWith("v1.json:/meta/knobs/n_persist: expected an integer"));
  p.meta.erase("knobs");
  CHECK_THROWS_WITH(chunk_placement(p, "v1.json"), Catch::StartsWith("v1.json:/chunks/0: no \"resident\""));
}
