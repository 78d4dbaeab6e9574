// The CPU passes DeepSpeed's stage-3 step() makes around CPU Adam (knob step_host_passes, plan ops
// of kind host_pass), as the runtime runs them: one place for the chunk store (which replays them)
// and the profiler (which times them for the machine file's host_passes).
// Runtime header: includes ATen.
#pragma once

#include <ATen/core/Tensor.h>

namespace protwin::rt {

// has_overflow: isinf(g).any() or isnan(g).any().
bool has_non_finite(const at::Tensor& g);
// unscale_and_clip_grads: g *= inv_scale, in place.
void unscale(at::Tensor& g, double inv_scale);
// The fp16 copy of the updated master: half (kHalf, same numel) = master.
void copy_to_half(at::Tensor& half, const at::Tensor& master);

}  // namespace protwin::rt
