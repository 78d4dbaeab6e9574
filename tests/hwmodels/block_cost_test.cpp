// A profile's whole-block time wins over the sum of the block's kernels (issue 22). Oracle: the
// profile's own numbers (the cost is exactly the block's entry, or exactly the kernels' sum).
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "tests/traces/plan_fixtures.h"
#include "traces/block_signature.h"
#include "traces/plan.h"

using namespace protwin;

namespace {

traces::Plan layer_plan(const std::string& family) {
  nlohmann::json j = small_plan_json();
  j["meta"]["batch"] = 4;
  j["meta"]["seq"] = 256;
  j["meta"]["dtype"] = "fp32";
  j["meta"]["model_spec"] = {{"family", family}, {"hidden", 256}, {"heads", 4}, {"kv_heads", 4},
                             {"ffn_hidden", 1024}, {"vocab", 256}, {"layers", 4}};
  const nlohmann::json gemm = {{"kind", "gemm"}, {"shape", {1024, 768, 256}}, {"dtype", "fp32"}, {"count", 3}};
  j["kernel_sets"] = nlohmann::json::array({nlohmann::json::array({gemm})});
  j["ops"][1]["kernels"] = 0;
  j["ops"][1]["attrs"] = {{"block", "layer.0"}};
  return traces::plan_from_json(j, "p.json");
}

// A profile with the GEMM at 1 ms and, when `with_block`, the layer's forward at 7 ms.
hw::ProfileLookup profile(bool with_block) {
  return [with_block](const traces::OpSignature& s) -> std::optional<double> {
    if (s.kind == "gemm") return 1e-3;
    if (with_block && s.key() == "block_forward.layer.gpt2:fp32:4x256x256x4x4x1024x256") return 7e-3;
    return std::nullopt;
  };
}

}  // namespace

TEST_CASE("a block the profile timed whole costs its measured time, else its kernels' sum", "[hwmodels][block]") {
  const hw::Machine m = hw::load_machine("host-emulated");
  traces::Plan p = layer_plan("gpt2");
  CHECK(hw::HardwareCostModel(m, profile(true)).cost(p.ops[1], p).stream_time().seconds() == Approx(7e-3));
  CHECK(hw::HardwareCostModel(m, profile(true)).cost(p.ops[1], p).source == hw::KernelSource::kProfile);  // priced_by
  p.ops[1].kind = traces::OpKind::kRecompute;  // the runtime's recompute is the same forward
  CHECK(hw::HardwareCostModel(m, profile(true)).cost(p.ops[1], p).stream_time().seconds() == Approx(7e-3));
  CHECK(hw::HardwareCostModel(m, profile(false)).cost(p.ops[1], p).stream_time().seconds() == Approx(3e-3));
  p.ops[1].kind = traces::OpKind::kBackward;  // no backward entry: the kernels (GEMMs keep their profile time)
  CHECK(hw::HardwareCostModel(m, profile(true)).cost(p.ops[1], p).stream_time().seconds() == Approx(3e-3));
  const traces::Plan llama = layer_plan("llama");  // another model's block is not this entry
  CHECK(hw::HardwareCostModel(m, profile(true)).cost(llama.ops[1], llama).stream_time().seconds() == Approx(3e-3));
}
