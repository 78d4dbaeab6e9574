// protwin-probe: measures what the machine files need on a real GPU and writes a machine-file
// fragment (hwmodels/probe/probe_report.h). Only the measuring is CUDA; arguments and output are
// plain C++ (probe_options.*, probe_report.*). Times are CUDA events, median of repeats, after a
// warm-up.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "hwmodels/probe/probe_options.h"
#include "hwmodels/probe/probe_report.h"
#include "traces/error.h"
#include "traces/file_io.h"

namespace pp = protwin::hw::probe;

namespace {

#define CUDA_OK(call)                                                                   \
  do {                                                                                  \
    const cudaError_t err_ = (call);                                                    \
    PROTWIN_ASSERT(err_ == cudaSuccess, #call, ": ", cudaGetErrorString(err_));         \
  } while (0)
#define CUBLAS_OK(call)                                                                 \
  do {                                                                                  \
    const cublasStatus_t st_ = (call);                                                  \
    PROTWIN_ASSERT(st_ == CUBLAS_STATUS_SUCCESS, #call, ": cuBLAS status ", int(st_)); \
  } while (0)

__global__ void empty_kernel() {}

// Median seconds of `repeats` runs of fn (which enqueues work on `s`), after one warm-up.
template <typename Fn>
double time_median(cudaStream_t s, int repeats, Fn fn) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  fn();
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    CUDA_OK(cudaEventRecord(a, s));
    fn();
    CUDA_OK(cudaEventRecord(b, s));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  return pp::median(t);
}

void measure_gemm(const pp::ProbeOptions& o, cublasHandle_t h, cudaStream_t s, pp::ProbeResults& r) {
  for (const auto& dtype : o.dtypes) {
    cudaDataType_t t = CUDA_R_32F;
    cublasComputeType_t c = CUBLAS_COMPUTE_32F_PEDANTIC;
    size_t elt = 4;
    if (dtype == "tf32") c = CUBLAS_COMPUTE_32F_FAST_TF32;
    if (dtype == "fp16") { t = CUDA_R_16F; c = CUBLAS_COMPUTE_32F; elt = 2; }
    if (dtype == "bf16") { t = CUDA_R_16BF; c = CUBLAS_COMPUTE_32F; elt = 2; }
    for (int64_t n : o.gemm_sizes) {
      const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * elt;
      size_t free_b = 0, total_b = 0;
      CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
      if (3 * bytes > free_b * 9 / 10) continue;  // does not fit: skip the point
      void* abc[3];  // A, B, C
      for (void*& m : abc) {
        CUDA_OK(cudaMalloc(&m, bytes));
        CUDA_OK(cudaMemset(m, 0, bytes));  // zeros: no denormal or NaN slow paths
      }
      const float alpha = 1, beta = 0;
      const int ni = static_cast<int>(n);
      const double sec = time_median(s, o.repeats, [&] {
        CUBLAS_OK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &alpha, abc[0], t, ni, abc[1], t, ni,
                               &beta, abc[2], t, ni, c, CUBLAS_GEMM_DEFAULT));
      });
      r.gemm.push_back({dtype, n, sec});
      for (void* m : abc) CUDA_OK(cudaFree(m));
    }
  }
}

void measure_hbm(const pp::ProbeOptions& o, cudaStream_t s, pp::ProbeResults& r) {
  for (int64_t bytes : pp::copy_sizes(o)) {
    void *a, *b;
    if (cudaMalloc(&a, bytes) != cudaSuccess) break;
    if (cudaMalloc(&b, bytes) != cudaSuccess) { cudaFree(a); break; }
    const double sec = time_median(s, o.repeats, [&] {
      CUDA_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
    });
    r.hbm.push_back({2 * bytes, sec});  // read + written
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
  }
}

void measure_host_link(const pp::ProbeOptions& o, cudaStream_t s, pp::ProbeResults& r) {
  const std::vector<int64_t> sizes = pp::copy_sizes(o);
  const int64_t max = sizes.back();
  void *dev_a, *dev_b, *pin_a, *pin_b;
  for (void** p : {&dev_a, &dev_b}) CUDA_OK(cudaMalloc(p, max));
  for (void** p : {&pin_a, &pin_b}) CUDA_OK(cudaMallocHost(p, max));
  char* page = static_cast<char*>(std::malloc(max));
  PROTWIN_ASSERT(page, "malloc of ", max, " bytes failed");
  std::memset(page, 1, max);  // fault the pages in before timing
  cudaStream_t s2;
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  for (int64_t bytes : sizes) {
    auto one = [&](const char* key, void* dst, const void* src, cudaMemcpyKind kind) {
      const double sec = time_median(s, o.repeats, [&] { CUDA_OK(cudaMemcpyAsync(dst, src, bytes, kind, s)); });
      r.host[key].push_back({bytes, sec});
    };
    one("h2d_pinned", dev_a, pin_a, cudaMemcpyHostToDevice);
    one("d2h_pinned", pin_a, dev_a, cudaMemcpyDeviceToHost);
    one("h2d_pageable", dev_a, page, cudaMemcpyHostToDevice);
    one("d2h_pageable", page, dev_a, cudaMemcpyDeviceToHost);
    // Both directions at once: each timed on its own stream, started together.
    std::vector<double> up, down;
    for (int i = 0; i <= o.repeats; ++i) {
      cudaEvent_t e[4];
      for (auto& ev : e) CUDA_OK(cudaEventCreate(&ev));
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaEventRecord(e[0], s));
      CUDA_OK(cudaStreamWaitEvent(s2, e[0], 0));
      CUDA_OK(cudaEventRecord(e[2], s2));
      CUDA_OK(cudaMemcpyAsync(dev_a, pin_a, bytes, cudaMemcpyHostToDevice, s));
      CUDA_OK(cudaMemcpyAsync(pin_b, dev_b, bytes, cudaMemcpyDeviceToHost, s2));
      CUDA_OK(cudaEventRecord(e[1], s));
      CUDA_OK(cudaEventRecord(e[3], s2));
      CUDA_OK(cudaDeviceSynchronize());
      float ms_up = 0, ms_down = 0;
      CUDA_OK(cudaEventElapsedTime(&ms_up, e[0], e[1]));
      CUDA_OK(cudaEventElapsedTime(&ms_down, e[2], e[3]));
      if (i > 0) {  // the first run is the warm-up
        up.push_back(ms_up * 1e-3);
        down.push_back(ms_down * 1e-3);
      }
      for (auto& ev : e) CUDA_OK(cudaEventDestroy(ev));
    }
    r.host["h2d_duplex"].push_back({bytes, pp::median(up)});
    r.host["d2h_duplex"].push_back({bytes, pp::median(down)});
  }
  CUDA_OK(cudaStreamDestroy(s2));
  std::free(page);
  for (void* p : {pin_a, pin_b}) CUDA_OK(cudaFreeHost(p));
  for (void* p : {dev_a, dev_b}) CUDA_OK(cudaFree(p));
}

void measure_launch(const pp::ProbeOptions& o, cudaStream_t s, pp::ProbeResults& r) {
  constexpr int kBatch = 1000;
  const double batch = time_median(s, o.repeats, [&] {
    for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 1, 0, s>>>();
  });
  r.launch_floor_us = batch / kBatch * 1e6;
}

void measure_peers(const pp::ProbeOptions& o, pp::ProbeResults& r) {
  const int64_t bytes = std::min<int64_t>(o.max_copy_bytes, int64_t{256} << 20);
  for (int src = 0; src < r.device_count; ++src) {
    for (int dst = 0; dst < r.device_count; ++dst) {
      if (src == dst) continue;
      int can = 0;
      CUDA_OK(cudaDeviceCanAccessPeer(&can, src, dst));
      CUDA_OK(cudaSetDevice(src));
      if (can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(dst, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
        else CUDA_OK(e);
      }
      void *a, *b;
      CUDA_OK(cudaMalloc(&a, bytes));
      CUDA_OK(cudaSetDevice(dst));
      CUDA_OK(cudaMalloc(&b, bytes));
      CUDA_OK(cudaSetDevice(src));
      cudaStream_t s;
      CUDA_OK(cudaStreamCreate(&s));
      const double sec = time_median(s, o.repeats, [&] {
        CUDA_OK(cudaMemcpyPeerAsync(b, dst, a, src, bytes, s));
      });
      r.peers.push_back({src, dst, can != 0, bytes, sec});
      CUDA_OK(cudaStreamDestroy(s));
      CUDA_OK(cudaFree(a));
      CUDA_OK(cudaSetDevice(dst));
      CUDA_OK(cudaFree(b));
    }
  }
  CUDA_OK(cudaSetDevice(r.device));
}

int run(const std::vector<std::string>& args) {
  const pp::ProbeOptions o = pp::parse_probe_options(args);
  if (o.help) {
    std::cout << pp::probe_usage();
    return 0;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cerr << "protwin-probe: error: no GPU: "
              << (e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found")
              << "\nhint: run it on a machine with an NVIDIA GPU and driver; the machine files in "
                 "hwmodels/machines/ keep their public numbers until then\n";
    return 2;
  }
  PROTWIN_CHECK(o.device < count, "--device: expected a GPU index below ", count, ", got ", o.device);

  pp::ProbeResults r;
  r.device = o.device;
  r.device_count = count;
  CUDA_OK(cudaSetDevice(o.device));
  cudaDeviceProp p;
  CUDA_OK(cudaGetDeviceProperties(&p, o.device));
  r.gpu_name = p.name;
  r.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  r.sm_count = p.multiProcessorCount;
  r.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  size_t free_b = 0, total_b = 0;
  CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
  r.free_bytes = static_cast<int64_t>(free_b);
  int rt = 0, drv = 0;
  CUDA_OK(cudaRuntimeGetVersion(&rt));
  CUDA_OK(cudaDriverGetVersion(&drv));
  r.cuda_runtime = std::to_string(rt);
  r.cuda_driver = std::to_string(drv);

  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CUBLAS_OK(cublasCreate(&h));
  CUBLAS_OK(cublasSetStream(h, s));
  int cublas_version = 0;
  CUBLAS_OK(cublasGetVersion(h, &cublas_version));
  r.cublas = std::to_string(cublas_version);

  std::cerr << "protwin-probe: " << r.gpu_name << " (" << r.arch << "), " << count << " GPU(s)\n";
  std::cerr << "  gemm...\n";
  measure_gemm(o, h, s, r);
  std::cerr << "  hbm...\n";
  measure_hbm(o, s, r);
  std::cerr << "  host link...\n";
  measure_host_link(o, s, r);
  std::cerr << "  launch...\n";
  measure_launch(o, s, r);
  if (o.peers && count > 1) {
    std::cerr << "  peers...\n";
    measure_peers(o, r);
  }
  CUBLAS_OK(cublasDestroy(h));
  CUDA_OK(cudaStreamDestroy(s));

  const std::string text = pp::machine_fragment(r).dump(2) + "\n";
  if (o.output.empty()) std::cout << text;
  else protwin::traces::write_file_atomic(o.output, text);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const protwin::Error& e) {
    std::cerr << "protwin-probe: " << (e.kind() == protwin::ErrorKind::kUser ? "error: " : "") << e.what()
              << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "protwin-probe: internal error: " << e.what() << "\n";
    return 1;
  }
}
