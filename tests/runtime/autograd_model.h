// Test oracle: the same two transformers written with high-level ATen ops (layer_norm, softmax,
// gelu, cross_entropy_loss, repeat_interleave) and differentiated by LibTorch autograd.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/model/runtime_model.h"

namespace protwin::rt::testing {

// `params` in stored_parameters(cfg) order. Returns the mean cross-entropy; if `embedding_out` is given,
// it receives the embedding output (with retain_grad set, for the input gradient).
at::Tensor autograd_loss(const ModelSpec& cfg, const std::vector<at::Tensor>& params,
                         const at::Tensor& tokens, const at::Tensor& targets,
                         at::Tensor* embedding_out = nullptr);

}  // namespace protwin::rt::testing
