// protwin-probe's measurements and the machine-file fragment written from them, in plain C++
// (compiled by g++ and tested without a GPU).
//
// The fragment uses the field names of hwmodels/machines/*.json (protwin.machine v1) so its values
// can be copied or applied with --set; every value gets a provenance entry of kind "measured".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::hw::probe {

struct GemmPoint {
  std::string dtype;  // fp32 (no TF32), tf32, fp16, bf16 (fp16/bf16 accumulate in fp32)
  int64_t n = 0;      // square: m = n = k
  double seconds = 0; // median per call
  double gflop() const { return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 1e9; }
  double tflops() const { return gflop() / seconds / 1e3; }
};

struct CopyPoint {
  int64_t bytes = 0;   // bytes moved (for HBM: read + written)
  double seconds = 0;  // median per copy
  double GBps() const { return static_cast<double>(bytes) / seconds / 1e9; }
};

struct PeerPoint {
  int src = 0, dst = 0;
  bool p2p = false;    // cudaDeviceCanAccessPeer
  int64_t bytes = 0;
  double seconds = 0;
  double GBps() const { return static_cast<double>(bytes) / seconds / 1e9; }
};

struct ProbeResults {
  std::string gpu_name, arch;  // "sm_80"
  int device = 0, device_count = 0, sm_count = 0;
  int64_t memory_bytes = 0, free_bytes = 0;
  std::string cuda_runtime, cuda_driver, cublas;  // versions
  std::vector<GemmPoint> gemm;
  std::vector<CopyPoint> hbm;
  // Keys: h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, and, both directions at once,
  // h2d_duplex, d2h_duplex (pinned).
  std::map<std::string, std::vector<CopyPoint>> host;
  double launch_floor_us = 0;   // back-to-back empty kernels, per kernel
  std::vector<PeerPoint> peers;
};

// The fragment: {"format": "protwin.machine-fragment", "version": 1, "generator", "gpu": {...},
// "host_link": {...}, "provenance": {...}, "raw": {...all points...}}.
nlohmann::json machine_fragment(const ProbeResults& r);

// Median of samples (the probe's per-point statistic); 0 for none.
double median(std::vector<double> samples);

}  // namespace protwin::hw::probe
