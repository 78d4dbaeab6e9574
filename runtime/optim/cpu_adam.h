// CPU Adam / AdamW over flat fp32 buffers (master params, grads, exp_avg, exp_avg_sq), the
// optimizer of non-persistent chunks. Torch-free, so any library can call it.
//
// Math per element, matching torch.optim.Adam / AdamW (PyTorch 1.13, single-tensor path):
//   AdamW: p *= 1 - lr * wd              Adam: g += wd * p
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p += (-lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// with torch's rounding (same fused multiply-adds and divisions as its CPU kernels).
// Kernels: AVX-512F, AVX2+FMA and scalar, picked at run time from the CPU (the binary stays
// portable; no -march flag). Work is split over `threads` std::threads in cache-line-aligned
// slices. Memory traffic: reads p, g, m, v (16 B/param), writes p, m, v (12 B/param) — 28 B/param,
// plus 2 B/param when a bf16/fp16 copy is written.
#pragma once

#include <cstdint>
#include <string>

namespace protwin::rt {

struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // true: AdamW
};

enum class LowPrecision { kNone, kBf16, kFp16 };

enum class AdamKernel { kAuto, kScalar, kAvx2, kAvx512 };

struct AdamBuffers {
  float* params = nullptr;
  const float* grads = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  int64_t n = 0;
  // Optional: the updated params rounded to bf16/fp16 (round to nearest even), for upload.
  uint16_t* low_precision_out = nullptr;
  LowPrecision low_precision = LowPrecision::kNone;
};

// The best kernel this CPU supports.
AdamKernel best_adam_kernel();
std::string to_string(AdamKernel k);

// One Adam step; `step` is the 1-based step count after this update (bias correction).
// Throws protwin::Error on bad arguments (null buffers, step < 1, threads < 1, kernel the CPU lacks).
void adam_step_cpu(const AdamConfig& cfg, int64_t step, const AdamBuffers& buf, int threads = 1,
                   AdamKernel kernel = AdamKernel::kAuto);

}  // namespace protwin::rt
