// Vectorised, multi-threaded CPU Adam (see cpu_adam.h). One kernel per ISA, chosen at run time
// with __builtin_cpu_supports, compiled with GCC target attributes so the project needs no -march.
#include "runtime/optim/cpu_adam.h"

// GCC 12 false positive inside avx512fintrin.h (_mm512_undefined_* used as pass-through).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "traces/error.h"

namespace protwin::rt {
namespace {

// Per-step constants, in fp32 as torch's CPU kernels apply double scalars to fp32 tensors.
// The operation order and fusion copy torch 1.13's CPU kernels (checked bitwise against them):
// add(alpha) and addcmul are fused multiply-adds, addcdiv is p + (s * m) / denom, and the bias
// correction of sqrt(v) is a true division. Adam is ill-conditioned where |g| ~ eps, so a one-ulp
// difference there would move a parameter by up to lr.
struct StepConsts {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float neg_step_size;     // -lr / (1 - beta1^t)
  float bc2_sqrt;          // sqrt(1 - beta2^t)
  float eps;
  float weight_decay;      // Adam: added to the gradient
  float decay;             // AdamW: 1 - lr * wd
  bool decoupled;
};

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as c10::BFloat16.
uint16_t to_bf16(float f) {
  if (std::isnan(f)) return 0x7FC0;
  const uint32_t u = bits_of(f);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// IEEE fp32 -> fp16, round to nearest even (the FP16 library's fp16_ieee_from_fp32_value, which
// c10::Half uses).
uint16_t to_fp16(float f) {
  const float scale_to_inf = 0x1.0p+112f, scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = bits_of(f), shl1_w = w + w, sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t b = bits_of(base);
  const uint32_t nonsign = ((b >> 13) & 0x00007C00u) + (b & 0x00000FFFu);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

uint16_t to_low(float f, LowPrecision lp) { return lp == LowPrecision::kBf16 ? to_bf16(f) : to_fp16(f); }

void adam_scalar(const StepConsts& k, const AdamBuffers& b, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    float p = b.params[i], g = b.grads[i];
    if (k.decoupled) {
      p = p * k.decay;
    } else {
      g = std::fma(p, k.weight_decay, g);
    }
    const float m = std::fma(g, k.one_minus_beta1, b.exp_avg[i] * k.beta1);
    const float v = std::fma(k.one_minus_beta2 * g, g, b.exp_avg_sq[i] * k.beta2);
    const float denom = std::sqrt(v) / k.bc2_sqrt + k.eps;
    p = p + (k.neg_step_size * m) / denom;
    b.params[i] = p;
    b.exp_avg[i] = m;
    b.exp_avg_sq[i] = v;
    if (b.low_precision_out != nullptr) b.low_precision_out[i] = to_low(p, b.low_precision);
  }
}

__attribute__((target("avx2,fma"))) void adam_avx2(const StepConsts& k, const AdamBuffers& b,
                                                int64_t lo, int64_t hi) {
  const __m256 b1 = _mm256_set1_ps(k.beta1), omb1 = _mm256_set1_ps(k.one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps(k.beta2), omb2 = _mm256_set1_ps(k.one_minus_beta2);
  const __m256 nss = _mm256_set1_ps(k.neg_step_size), bc2 = _mm256_set1_ps(k.bc2_sqrt);
  const __m256 eps = _mm256_set1_ps(k.eps), wd = _mm256_set1_ps(k.weight_decay);
  const __m256 decay = _mm256_set1_ps(k.decay);
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    __m256 p = _mm256_loadu_ps(b.params + i), g = _mm256_loadu_ps(b.grads + i);
    if (k.decoupled) {
      p = _mm256_mul_ps(p, decay);
    } else {
      g = _mm256_fmadd_ps(p, wd, g);
    }
    const __m256 m = _mm256_fmadd_ps(g, omb1, _mm256_mul_ps(_mm256_loadu_ps(b.exp_avg + i), b1));
    const __m256 v =
        _mm256_fmadd_ps(_mm256_mul_ps(omb2, g), g, _mm256_mul_ps(_mm256_loadu_ps(b.exp_avg_sq + i), b2));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), bc2), eps);
    p = _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(nss, m), denom));
    _mm256_storeu_ps(b.params + i, p);
    _mm256_storeu_ps(b.exp_avg + i, m);
    _mm256_storeu_ps(b.exp_avg_sq + i, v);
    if (b.low_precision_out != nullptr)  // rare path on AVX2-only hosts: convert from L1
      for (int64_t j = i; j < i + 8; ++j) b.low_precision_out[j] = to_low(b.params[j], b.low_precision);
  }
  adam_scalar(k, b, i, hi);
}

__attribute__((target("avx512f"))) void adam_avx512(const StepConsts& k, const AdamBuffers& b,
                                                     int64_t lo, int64_t hi) {
  const __m512 b1 = _mm512_set1_ps(k.beta1), omb1 = _mm512_set1_ps(k.one_minus_beta1);
  const __m512 b2 = _mm512_set1_ps(k.beta2), omb2 = _mm512_set1_ps(k.one_minus_beta2);
  const __m512 nss = _mm512_set1_ps(k.neg_step_size), bc2 = _mm512_set1_ps(k.bc2_sqrt);
  const __m512 eps = _mm512_set1_ps(k.eps), wd = _mm512_set1_ps(k.weight_decay);
  const __m512 decay = _mm512_set1_ps(k.decay);
  const __m512i bf16_bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1);
  const __m512i bf16_nan = _mm512_set1_epi32(0x7FC0);
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16) {
    __m512 p = _mm512_loadu_ps(b.params + i), g = _mm512_loadu_ps(b.grads + i);
    if (k.decoupled) {
      p = _mm512_mul_ps(p, decay);
    } else {
      g = _mm512_fmadd_ps(p, wd, g);
    }
    const __m512 m = _mm512_fmadd_ps(g, omb1, _mm512_mul_ps(_mm512_loadu_ps(b.exp_avg + i), b1));
    const __m512 v =
        _mm512_fmadd_ps(_mm512_mul_ps(omb2, g), g, _mm512_mul_ps(_mm512_loadu_ps(b.exp_avg_sq + i), b2));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(v), bc2), eps);
    p = _mm512_add_ps(p, _mm512_div_ps(_mm512_mul_ps(nss, m), denom));
    _mm512_storeu_ps(b.params + i, p);
    _mm512_storeu_ps(b.exp_avg + i, m);
    _mm512_storeu_ps(b.exp_avg_sq + i, v);
    if (b.low_precision_out != nullptr) {
      __m256i half;
      if (b.low_precision == LowPrecision::kBf16) {
        const __m512i u = _mm512_castps_si512(p);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, bf16_bias), lsb), 16);
        r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), bf16_nan);
        half = _mm512_cvtepi32_epi16(r);
      } else {
        half = _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.low_precision_out + i), half);
    }
  }
  adam_scalar(k, b, i, hi);
}

bool cpu_has(AdamKernel k) {
  switch (k) {
    case AdamKernel::kAvx512: return __builtin_cpu_supports("avx512f");
    case AdamKernel::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return true;
  }
}

}  // namespace

AdamKernel best_adam_kernel() {
  if (cpu_has(AdamKernel::kAvx512)) return AdamKernel::kAvx512;
  if (cpu_has(AdamKernel::kAvx2)) return AdamKernel::kAvx2;
  return AdamKernel::kScalar;
}

std::string to_string(AdamKernel k) {
  switch (k) {
    case AdamKernel::kAuto: return "auto";
    case AdamKernel::kScalar: return "scalar";
    case AdamKernel::kAvx2: return "avx2";
    case AdamKernel::kAvx512: return "avx512";
  }
  return "?";
}

void adam_step_cpu(const AdamConfig& cfg, int64_t step, const AdamBuffers& buf, int threads,
                   AdamKernel kernel) {
  PROTWIN_CHECK(step >= 1, "cpu adam: step must be >= 1, got ", step);
  PROTWIN_CHECK(threads >= 1, "cpu adam: threads must be >= 1, got ", threads);
  PROTWIN_CHECK(buf.n >= 0, "cpu adam: negative element count ", buf.n);
  PROTWIN_CHECK(buf.n == 0 || (buf.params && buf.grads && buf.exp_avg && buf.exp_avg_sq),
                "cpu adam: params, grads, exp_avg and exp_avg_sq must all be set");
  PROTWIN_CHECK(buf.low_precision_out == nullptr || buf.low_precision != LowPrecision::kNone,
                "cpu adam: low_precision_out given without a low_precision format");
  if (kernel == AdamKernel::kAuto) kernel = best_adam_kernel();
  PROTWIN_CHECK(cpu_has(kernel), "cpu adam: this CPU does not support the ", to_string(kernel),
                " kernel");
  AdamBuffers b = buf;
  if (b.low_precision == LowPrecision::kNone) b.low_precision_out = nullptr;

  const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
  StepConsts k;
  k.beta1 = static_cast<float>(cfg.beta1);
  k.one_minus_beta1 = static_cast<float>(1.0 - cfg.beta1);
  k.beta2 = static_cast<float>(cfg.beta2);
  k.one_minus_beta2 = static_cast<float>(1.0 - cfg.beta2);
  k.neg_step_size = static_cast<float>(-cfg.lr / bc1);
  k.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  k.eps = static_cast<float>(cfg.eps);
  k.weight_decay = static_cast<float>(cfg.weight_decay);
  k.decay = static_cast<float>(1.0 - cfg.lr * cfg.weight_decay);
  k.decoupled = cfg.decoupled_weight_decay;

  auto run = [&](int64_t lo, int64_t hi) {
    switch (kernel) {
      case AdamKernel::kAvx512: adam_avx512(k, b, lo, hi); break;
      case AdamKernel::kAvx2: adam_avx2(k, b, lo, hi); break;
      default: adam_scalar(k, b, lo, hi); break;
    }
  };
  // Slices of whole cache lines (16 floats), at least 64 Ki elements each: below that a thread
  // costs more to start than it saves.
  constexpr int64_t kAlign = 16, kMinSlice = 1 << 16;
  const int64_t useful = std::max<int64_t>(1, b.n / kMinSlice);
  const int64_t nt = std::min<int64_t>(threads, useful);
  const int64_t slice = ((b.n + nt - 1) / nt + kAlign - 1) / kAlign * kAlign;
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < nt; ++t) {
    const int64_t lo = std::min(b.n, t * slice), hi = std::min(b.n, lo + slice);
    if (lo < hi) pool.emplace_back(run, lo, hi);
  }
  run(0, std::min(b.n, slice));
  for (std::thread& th : pool) th.join();
}

}  // namespace protwin::rt
