// Device Adam / AdamW for persistent chunks: the same math as adam_step_cpu (cpu_adam.h), written
// with ATen ops so it runs wherever the tensors live (CUDA, or the emulated device on the CPU).
// Runtime header: includes ATen.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "runtime/optim/cpu_adam.h"

namespace protwin::rt {

// Updates param, exp_avg and exp_avg_sq in place (fp32, same shape and device). `step` is
// 1-based. Throws protwin::Error on mismatched tensors.
void adam_step_device(const AdamConfig& cfg, int64_t step, at::Tensor& param,
                      const at::Tensor& grad, at::Tensor& exp_avg, at::Tensor& exp_avg_sq);

}  // namespace protwin::rt
