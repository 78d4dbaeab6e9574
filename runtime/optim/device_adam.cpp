#include "runtime/optim/device_adam.h"

#include <cmath>

#include <ATen/ATen.h>

#include "traces/error.h"

namespace protwin::rt {

void adam_step_device(const AdamConfig& cfg, int64_t step, at::Tensor& param,
                      const at::Tensor& grad, at::Tensor& exp_avg, at::Tensor& exp_avg_sq) {
  PROTWIN_CHECK(step >= 1, "device adam: step must be >= 1, got ", step);
  for (const at::Tensor* t : {&grad, static_cast<const at::Tensor*>(&exp_avg),
                              static_cast<const at::Tensor*>(&exp_avg_sq)}) {
    PROTWIN_CHECK(t->sizes() == param.sizes() && t->device() == param.device() &&
                      t->scalar_type() == param.scalar_type(),
                  "device adam: grad and optimizer states must match the parameter's shape ",
                  param.sizes(), ", device and dtype");
  }
  at::NoGradGuard no_grad;
  at::Tensor g = grad;
  if (cfg.weight_decay != 0.0) {
    if (cfg.decoupled_weight_decay) {
      param.mul_(1.0 - cfg.lr * cfg.weight_decay);
    } else {
      g = grad.add(param, cfg.weight_decay);
    }
  }
  exp_avg.mul_(cfg.beta1).add_(g, 1.0 - cfg.beta1);
  exp_avg_sq.mul_(cfg.beta2).addcmul_(g, g, 1.0 - cfg.beta2);
  const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
  at::Tensor denom = exp_avg_sq.sqrt().div_(std::sqrt(bc2)).add_(cfg.eps);
  param.addcdiv_(exp_avg, denom, -cfg.lr / bc1);
}

}  // namespace protwin::rt
