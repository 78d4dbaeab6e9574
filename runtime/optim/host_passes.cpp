#include "runtime/optim/host_passes.h"

#include <ATen/ATen.h>

namespace protwin::rt {

bool has_non_finite(const at::Tensor& g) {
  return at::isinf(g).any().item<bool>() || at::isnan(g).any().item<bool>();
}

void unscale(at::Tensor& g, double inv_scale) { g.mul_(inv_scale); }

void copy_to_half(at::Tensor& half, const at::Tensor& master) { half.copy_(master.reshape({-1})); }

}  // namespace protwin::rt
