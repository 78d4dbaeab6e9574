#include "hwmodels/kernel_model.h"

#include <algorithm>
#include <limits>

#include "traces/error.h"
#include "traces/op_signature.h"
#include "traces/units.h"

namespace protwin::hw {

namespace {

// CTA tiles of cuBLAS/CUTLASS tensor-core and SIMT GEMMs (the names NeuSight records, e.g.
// ampere_sgemm_128x64_tn, cutlass_80_simt_sgemm_256x128_8x4) and the fraction of the large tile's
// per-SM rate each keeps. Per k-step a tile loads Tm + Tn operands for Tm x Tn FMAs, so smaller
// tiles are more bound by shared-memory traffic: efficiency ~ intensity / (intensity + 8), with the
// intensity Tm Tn / (Tm + Tn) in elements, normalised to 256x128 (assumed, not fitted).
struct Tile {
  int64_t m, n;
};
constexpr Tile kTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}, {32, 64}, {64, 32}};
constexpr int kSplits[] = {1, 2, 3, 4, 6, 8, 12, 16};

double tile_efficiency(const Tile& t) {
  auto eff = [](double m, double n) {
    const double intensity = m * n / (m + n);
    return intensity / (intensity + 8.0);
  };
  return eff(static_cast<double>(t.m), static_cast<double>(t.n)) / eff(256, 128);
}

// The floor every kernel pays on the GPU (gpu.kernel_floor_us, else launch_floor_us).
double kernel_floor_seconds(const Machine& m) {
  return (m.gpu.kernel_floor_us > 0 ? m.gpu.kernel_floor_us : m.gpu.launch_floor_us) * 1e-6;
}

}  // namespace

bool has_shape_model(const Machine& m) { return m.gpu.sms > 0; }

double memory_model_seconds(const Machine& m, double bytes) {
  return kernel_floor_seconds(m) + std::max(0.0, bytes) / (m.gpu.hbm_achievable_GBps * 1e9);
}

double gemm_model_seconds(const Machine& mach, int64_t batch, int64_t rows, int64_t cols, int64_t inner,
                          const std::string& dtype) {
  PROTWIN_CHECK(batch >= 1 && rows >= 1 && cols >= 1 && inner >= 1, "gemm ", batch, "x", rows, "x", cols, "x",
                inner, ": every dimension must be >= 1");
  const double per_sm = mach.compute_for(dtype).sustained_tflops * 1e12 / mach.gpu.sms;  // flop/s, large tile
  const double hbm = mach.gpu.hbm_achievable_GBps * 1e9;
  const double eb = std::max(1, traces::dtype_bytes(dtype));
  double best = std::numeric_limits<double>::infinity();
  for (const Tile& t : kTiles) {
    const int64_t tiles = batch * ceil_div(rows, t.m) * ceil_div(cols, t.n);
    const double rate = per_sm * tile_efficiency(t);
    for (int split : kSplits) {
      if (split > 1 && (inner / split < 256 || tiles >= mach.gpu.sms)) break;  // split-K only to fill idle SMs
      const int64_t ctas = tiles * split;
      const double waves = static_cast<double>(ceil_div(ctas, mach.gpu.sms));
      const double k_chunk = static_cast<double>(ceil_div(inner, split));
      double time = waves * 2.0 * static_cast<double>(t.m * t.n) * k_chunk / rate;
      if (split > 1)  // fp32 partial sums written and read back by the reduction
        time += 2.0 * 4.0 * static_cast<double>(batch * rows * cols) * split / hbm;
      best = std::min(best, time);
    }
  }
  const double b = static_cast<double>(batch), m = static_cast<double>(rows), n = static_cast<double>(cols),
               k = static_cast<double>(inner);
  const double t_mem = b * (m * k + k * n + m * n) * eb / hbm;
  return kernel_floor_seconds(mach) + std::max(best, t_mem);
}

}  // namespace protwin::hw
