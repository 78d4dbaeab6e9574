// Rotary position embedding in the rotate-half convention (Hugging Face LLaMA):
// y = x cos + rotate_half(x) sin. Shared by the model and the profiler, which times exactly this.
#pragma once

#include <ATen/ATen.h>

namespace protwin::rt {

// x [..., T, D] (any strides), cos/sin [T, D].
at::Tensor rope_forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// rotate_half is R(a, b) = (-b, a); its transpose is -R, so dx = dy cos - rotate_half(dy sin).
at::Tensor rope_backward(const at::Tensor& dy, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace protwin::rt
