// What protwin's LibTorch runtime allocates on its device for each block's forward and backward:
// the ATen calls of runtime/model/transformer.cpp (explicit per-block forward/backward, eager
// attention, fp32), in order, each output and temporary with its size and the point where its
// last handle goes away. The simulator replays these through the caching allocator's model
// (sim/engine/allocation_replay.h) to predict the runtime's measured device peak.
//
// Derived from what each op computes and how ATen 1.13's CPU kernels allocate (checked against the
// runtime's own allocator by tests/runtime/test_runtime_tensors.cpp):
//  - every ATen op returns a new tensor unless it is in place (add_, mul_, addmm_, index_add_);
//  - at::matmul folds batch dimensions with reshape, which COPIES an operand that is not viewable
//    as [batch, rows, cols] (q/k/v as views of the fused qkv output, the head split of a [B,T,C]
//    gradient, RoPE outputs laid out like their transposed input); the copy dies with the call;
//  - at::native_layer_norm returns (y, mean, rstd), the statistics fp32 [B,T,1];
//  - a reduction to [C] or [F] (bias and norm-weight gradients) is a temporary added in place.
// Left out: 0-dim scalar wrappers (4-8 bytes) and the per-thread scratch of layer-norm backward
// (2 x threads x C x 4 bytes), both below 0.1 % of any op's peak.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/workload/model_spec.h"

namespace protwin::sim {

// One step of an op: allocate `tensor` (bytes > 0) or drop the last handle of it (bytes == 0).
struct TensorEvent {
  int tensor = 0;
  int64_t bytes = 0;
};

// An op's allocations in order. Ids are local to the program; tensors it does not free outlive
// the op: `kept` (saved activations, in LayerActs/HeadActs field order) and `output`.
struct TensorProgram {
  std::vector<TensorEvent> events;
  std::vector<int> kept;
  int output = -1;

  int alloc(int64_t bytes);
  void free(int tensor);
  // The highest live bytes after any event (each tensor rounded as the caching allocator rounds):
  // the set the op holds while it runs; and the live bytes after the last event. For closed-form
  // checks.
  int64_t peak_bytes() const;
  int64_t kept_bytes() const;
};

// Shapes of one runtime step: the model, micro-batch B and sequence T.
struct RuntimeShapes {
  ModelSpec model;
  int64_t batch = 1;
  int64_t seq = 1;
};

// The programs of each block kind. Forward and recompute run the same ATen calls.
// embedding_forward: output x.  layer_forward: kept = the layer's saved tensors without its input
// (the input is the previous block's output), output y.  head_forward: kept = norm statistics,
// probabilities; output = the loss (a 0-dim tensor, one 512-byte block).
// layer/head backward: output = the input gradient; the saved tensors are freed by the caller.
TensorProgram embedding_forward_tensors(const RuntimeShapes& s);
TensorProgram layer_forward_tensors(const RuntimeShapes& s);
TensorProgram head_forward_tensors(const RuntimeShapes& s);
TensorProgram head_backward_tensors(const RuntimeShapes& s);
TensorProgram layer_backward_tensors(const RuntimeShapes& s);
TensorProgram embedding_backward_tensors(const RuntimeShapes& s);

// Bytes of each tensor a layer's forward saves (LayerActs field order, the input first), as a
// swap-in allocates them again (dense: GPT-2's q, k, v become three tensors).
std::vector<int64_t> layer_saved_tensor_bytes(const RuntimeShapes& s);
// Saved tensors that are views the swap-out packs into a dense temporary first (GPT-2's q, k, v
// of the fused qkv output): the bytes of one such temporary, 0 when there are none.
int64_t swap_out_pack_bytes(const RuntimeShapes& s);

}  // namespace protwin::sim
