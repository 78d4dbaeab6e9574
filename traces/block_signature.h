// A plan's compute op as one block of protwin's runtime model, run as the runtime runs it (issue
// 22): the key under which `protwin profile` records a whole block's forward or backward (the
// runtime's own ATen calls, views, copies and gradient accumulation included), and under which the
// cost model looks it up before summing the block's kernels.
//
//   kind  "block_<pass>.<role>.<family>"   pass forward | backward (recompute runs the forward),
//                                          role embedding | layer | head, family gpt2 | llama
//   shape {batch, seq, hidden, heads, kv_heads, ffn_hidden, vocab}
//   e.g.  "block_backward.layer.gpt2:fp32:4x256x256x4x4x1024x256"
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "traces/op_profile.h"
#include "traces/op_signature.h"
#include "traces/plan.h"

namespace protwin::traces {

struct BlockShape {
  std::string pass;    // "forward" | "backward"
  std::string role;    // "embedding" | "layer" | "head"
  std::string family;  // "gpt2" | "llama"
  int64_t batch = 0, seq = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0;
};

OpSignature block_signature(const BlockShape& b, const std::string& dtype);

// The block signature of a forward / recompute / backward op whose plan says what model it runs
// (meta.model_spec of family gpt2 or llama, meta.batch, meta.seq, attrs.block "embedding",
// "layer.<i>" or "head"); nullopt for every other op or plan.
std::optional<OpSignature> block_signature(const Plan& plan, const Op& op);

// The block a signature names; nullopt when it is not a block signature.
std::optional<BlockShape> block_shape_of(const OpSignature& sig);

// `p` without its block entries: blocks priced by their kernels alone, as before issue 22.
OpProfile without_blocks(const OpProfile& p);

// `pooled` (the rounds' profiles merged) with each block entry replaced by the median of the
// rounds' values of it (count 1): a round whose blocks were preempted does not move the pooled
// block, as one slow run does not move a round's (runtime/profile/op_timer.h).
OpProfile with_block_medians(const OpProfile& pooled, const std::vector<OpProfile>& rounds);

// `p` with every block entry for which `us` gives a time replaced by that time (count 1); other
// entries unchanged.
OpProfile with_block_times(const OpProfile& p, const std::function<std::optional<double>(const OpProfileEntry&)>& us);

}  // namespace protwin::traces
