#include "traces/chunk_sharding.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::traces {

std::vector<bool> device_sharded_chunks(const Plan& plan) {
  const size_t n = plan.chunks.size();
  std::vector<bool> adam(n, false), scattered(n, false), out(n, false);
  if (plan.ranks() <= 1) return out;
  for (const Op& op : plan.ops) {
    if (op.chunk < 0 || static_cast<size_t>(op.chunk) >= n) continue;
    if (op.kind == OpKind::kAdamDevice) adam[static_cast<size_t>(op.chunk)] = true;
    if (op.kind == OpKind::kReduceScatter) scattered[static_cast<size_t>(op.chunk)] = true;
  }
  for (size_t c = 0; c < n; ++c) out[c] = adam[c] && scattered[c];
  return out;
}

void check_sharded_chunks_gathered(const Plan& plan, const std::string& source) {
  const std::vector<bool> sharded = device_sharded_chunks(plan);
  for (const Op& op : plan.ops) {
    if (op.kind != OpKind::kAdamDevice || op.chunk < 0 || static_cast<size_t>(op.chunk) >= sharded.size() ||
        !sharded[static_cast<size_t>(op.chunk)])
      continue;  // out-of-range chunks are refused with the op loop's message
    const bool gathered = std::any_of(plan.ops.begin(), plan.ops.end(), [&](const Op& g) {
      return g.kind == OpKind::kAllGather && g.chunk == op.chunk &&
             std::find(g.deps.begin(), g.deps.end(), op.id) != g.deps.end();
    });
    PROTWIN_CHECK(gathered, source, ":/ops/", op.id, ": adam_device updates this rank's shard of chunk ", op.chunk,
                  " (its gradient is reduce-scattered), but no all_gather of the chunk follows it, so the other "
                  "ranks' parameters would stay stale\nhint: recompile the plan (protwin search/simulate -o writes "
                  "the all_gather after a persistent chunk's sharded device Adam)");
  }
}

}  // namespace protwin::traces
