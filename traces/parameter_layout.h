// The parameter tensors of a model, block by block, in execution order (order of first use in
// forward): the one parameter layout. The policy compiler packs chunks from it the way ProTrain
// does (REFERENCE §1); the runtime stores, binds, initialises and checkpoints its parameters in
// stored_parameters order.
//
// Blocks: "embedding", "layer.0" .. "layer.<L-1>", "head" (final norm + LM head). Weights are
// [out, in] as in torch.nn.Linear (y = x W^T + b; HF GPT-2's Conv1D stores the transpose; the
// count is the same). GPT-2 has one fused q/k/v matrix (HF's c_attn), the others three. A tied LM
// head is listed in "head" with `tied_to` naming the token embedding, which the embedding block
// used first; it adds no parameters and has no storage of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/model_spec.h"

namespace protwin::traces {

struct ParamTensor {
  std::string name;             // e.g. "layers.3.attn.q.weight"
  std::vector<int64_t> shape;
  int64_t numel = 0;
  std::string tied_to;          // non-empty: shares storage with that earlier tensor
  int64_t block = 0;            // index in parameter_layout: 0 embedding, 1..L layers, L+1 head
};

struct BlockParams {
  std::string block;
  std::vector<ParamTensor> tensors;
  // Parameters this block owns (tied tensors excluded).
  int64_t count() const;
};

std::vector<BlockParams> parameter_layout(const ModelSpec& m);

// Every parameter with storage of its own (tied ones left out), once, in execution order: the flat
// order of the runtime's weights, chunk store and checkpoints.
std::vector<ParamTensor> stored_parameters(const ModelSpec& m);

}  // namespace protwin::traces
