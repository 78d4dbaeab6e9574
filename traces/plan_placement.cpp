#include "traces/plan_placement.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::traces {

std::vector<ChunkPlacement> chunk_placement(const Plan& plan, const std::string& source) {
  std::vector<ChunkPlacement> out;
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const ChunkSpec& ch = plan.chunks[c];
    const std::string where = source + ":/chunks/" + std::to_string(c);
    PROTWIN_CHECK(ch.resident && !ch.optimizer.empty(), where, ": no \"resident\" and \"optimizer\" (where the chunk "
                  "lives and where its step runs)\nhint: recompile the plan with this protwin: ", kPlanRecompile);
    // A device step updates the chunk's device copy: a chunk that lives on the host has none.
    PROTWIN_CHECK(*ch.resident || ch.optimizer != "device", where,
                  "/optimizer: \"device\" needs \"resident\": true (a chunk off the device has no device copy to "
                  "update); hint: recompile the plan");
    out.push_back({*ch.resident, ch.optimizer == "device"});
  }
  return out;
}

std::vector<LayerKeep> layer_keeps(const Plan& plan, int layers) {
  std::vector<LayerKeep> out(static_cast<size_t>(std::max(0, layers)), LayerKeep::kAll);
  for (const Op& op : plan.ops) {
    const bool swap_out = op.kind == OpKind::kD2H && std::any_of(op.reads.begin(), op.reads.end(), [&](int t) {
      return t >= 0 && t < static_cast<int>(plan.tensors.size()) &&
             plan.tensors[static_cast<size_t>(t)].kind == TensorKind::kActivation;
    });
    if (op.kind != OpKind::kRecompute && !swap_out) continue;
    const LayerKeep keep = swap_out ? LayerKeep::kSwapped : LayerKeep::kInput;
    PROTWIN_CHECK(op.block >= 1 && op.block <= layers, describe_op(plan, op), ": ",
                  swap_out ? "activation copy" : "recompute", " of block ", op.block, ", which is not a decoder layer");
    LayerKeep& layer = out[static_cast<size_t>(op.block - 1)];
    PROTWIN_CHECK(layer == LayerKeep::kAll || layer == keep, describe_op(plan, op), ": block ", op.block,
                  " is both recomputed and swapped");
    layer = keep;
  }
  return out;
}

}  // namespace protwin::traces
