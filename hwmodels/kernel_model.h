// Shape-aware GPU kernel model: what a kernel costs from the GPU's specs alone, no measured table
// (hardware.md §5; issue #19). Used when the machine gives gpu.sms; the measured kernel tables
// (hwmodels/kernel_table.h) correct it where they have data.
//
// - GEMM (and batched GEMM): cuBLAS-like tiling. For each candidate CTA tile (256x128 ... 64x64)
//   and split-K factor, the C tiles (times the batch and the split) run in waves over the SMs;
//   one tile of Tm x Tn over k/split runs at sustained_tflops / sms times the tile's efficiency
//   (smaller tiles reuse operands less). The fastest candidate is taken, as cuBLAS's heuristics
//   aim to; its time is raised to the memory roofline (A, B and C once through HBM) and a
//   split-K pays its fp32 partial sums through HBM. Every kernel pays the kernel floor.
// - Memory-bound kernels (elementwise, normalisation, softmax, ...): floor + bytes / achievable HBM.
#pragma once

#include <cstdint>
#include <string>

#include "hwmodels/machine.h"

namespace protwin::hw {

// True when the machine has what the shape-aware model needs (gpu.sms).
bool has_shape_model(const Machine& m);

// Seconds of one (batched) GEMM C[b][m,n] = A[b][m,k] B[b][k,n] in `dtype`.
double gemm_model_seconds(const Machine& m, int64_t batch, int64_t rows, int64_t cols, int64_t inner,
                          const std::string& dtype);
// Seconds of one memory-bound kernel moving `bytes` (read + written).
double memory_model_seconds(const Machine& m, double bytes);

}  // namespace protwin::hw
