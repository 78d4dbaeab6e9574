// The parameter tensors of a model, block by block, in execution order (order of first use in
// forward), so the policy compiler can pack chunks the way ProTrain does (REFERENCE §1).
//
// Blocks: "embedding", "layer.0" .. "layer.<L-1>", "head" (final norm + LM head). Weights are
// [out, in] as in torch.nn.Linear (HF GPT-2's Conv1D stores the transpose; the count is the same).
// A tied LM head is listed in "head" with `tied_to` naming the token embedding, which the
// embedding block used first; it adds no parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/model_spec.h"

namespace protwin::sim {

struct ParamTensor {
  std::string name;             // e.g. "layers.3.attn.q.weight"
  std::vector<int64_t> shape;
  int64_t numel = 0;
  std::string tied_to;          // non-empty: shares storage with that earlier tensor
};

struct BlockParams {
  std::string block;
  std::vector<ParamTensor> tensors;
  // Parameters this block owns (tied tensors excluded).
  int64_t count() const;
};

std::vector<BlockParams> parameter_layout(const ModelSpec& m);

}  // namespace protwin::sim
