#include "hwmodels/probe/probe_report.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::hw::probe {

namespace {

constexpr const char* kSource = "protwin-probe (hwmodels/probe) on this machine";

// Best rate of a curve: the sustained / achievable figure of the machine file.
double best_GBps(const std::vector<CopyPoint>& pts) {
  double best = 0;
  for (const auto& p : pts) best = std::max(best, p.GBps());
  return best;
}

bool by_bytes(const CopyPoint& a, const CopyPoint& b) { return a.bytes < b.bytes; }

// Latency: time of the smallest copy (it is almost all fixed cost).
double smallest_us(const std::vector<CopyPoint>& pts) {
  return pts.empty() ? 0 : std::min_element(pts.begin(), pts.end(), by_bytes)->seconds * 1e6;
}

// Bandwidth of the largest copy: the rate used for chunk-sized transfers.
double largest_GBps(const std::vector<CopyPoint>& pts) {
  return pts.empty() ? 0 : std::max_element(pts.begin(), pts.end(), by_bytes)->GBps();
}

nlohmann::json copy_points(const std::vector<CopyPoint>& pts) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : pts) j.push_back({{"bytes", p.bytes}, {"seconds", p.seconds}, {"GBps", p.GBps()}});
  return j;
}

}  // namespace

double median(std::vector<double> s) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

nlohmann::json machine_fragment(const ProbeResults& r) {
  PROTWIN_ASSERT(!r.gpu_name.empty(), "probe results without a GPU name");
  nlohmann::json gpu = {{"name", r.gpu_name}, {"count", r.device_count}, {"memory_bytes", r.memory_bytes}};
  nlohmann::json prov = nlohmann::json::object();
  auto measured = [&](const std::string& pointer, const std::string& note) {
    prov[pointer] = {{"kind", "measured"}, {"source", kSource}, {"note", note}};
  };
  measured("/gpu/name", "cudaGetDeviceProperties");
  measured("/gpu/count", "cudaGetDeviceCount");
  measured("/gpu/memory_bytes", "cudaGetDeviceProperties totalGlobalMem");

  // GEMM: one curve per dtype, x = GFLOP per call, sorted by size.
  std::map<std::string, std::vector<GemmPoint>> by_dtype;
  for (const auto& g : r.gemm) by_dtype[g.dtype].push_back(g);
  for (auto& [dtype, pts] : by_dtype) {
    std::sort(pts.begin(), pts.end(), [](const GemmPoint& a, const GemmPoint& b) { return a.n < b.n; });
    nlohmann::json gflop = nlohmann::json::array(), tflops = nlohmann::json::array();
    double best = 0;
    for (const auto& p : pts) {
      gflop.push_back(p.gflop());
      tflops.push_back(p.tflops());
      best = std::max(best, p.tflops());
    }
    gpu["compute"][dtype] = {{"sustained_tflops", best}, {"gemm_curve", {{"gflop", gflop}, {"tflops", tflops}}}};
    measured("/gpu/compute/" + dtype,
             "cublasGemmEx, square n x n x n, median of repeats; sustained = best point" +
                 std::string(dtype == "fp32" ? "; CUBLAS_COMPUTE_32F_PEDANTIC (no TF32)" : ""));
  }

  if (!r.hbm.empty()) {
    std::vector<CopyPoint> pts = r.hbm;
    std::sort(pts.begin(), pts.end(), by_bytes);
    nlohmann::json bytes = nlohmann::json::array(), gbps = nlohmann::json::array();
    for (const auto& p : pts) {
      bytes.push_back(p.bytes);
      gbps.push_back(p.GBps());
    }
    gpu["hbm"] = {{"achievable_GBps", best_GBps(pts)}, {"curve", {{"bytes", bytes}, {"GBps", gbps}}}};
    measured("/gpu/hbm", "device-to-device cudaMemcpyAsync; bytes = read + written");
  }
  if (r.launch_floor_us > 0) {
    gpu["launch_floor_us"] = r.launch_floor_us;
    measured("/gpu/launch_floor_us", "back-to-back empty kernels on one stream, per kernel");
  }
  if (!r.peers.empty()) {
    bool all_p2p = true;
    for (const auto& p : r.peers) all_p2p = all_p2p && p.p2p;
    gpu["p2p"] = all_p2p;
    measured("/gpu/p2p", "cudaDeviceCanAccessPeer for every ordered pair");
  }

  nlohmann::json link = nlohmann::json::object();
  auto direction = [&](const std::string& dir) {
    for (const std::string memory : {"pinned", "pageable"}) {
      const auto it = r.host.find(dir + "_" + memory);
      if (it == r.host.end() || it->second.empty()) continue;
      link[dir][memory + "_GBps"] = largest_GBps(it->second);
      link[dir][memory + "_latency_us"] = smallest_us(it->second);
      measured("/host_link/" + dir + "/" + memory + "_GBps", "cudaMemcpyAsync from/to " +
               std::string(memory == "pinned" ? "cudaMallocHost" : "malloc") + " memory, largest buffer");
      measured("/host_link/" + dir + "/" + memory + "_latency_us", "time of the smallest " + memory + " copy");
    }
    const auto pinned = r.host.find(dir + "_pinned"), duplex = r.host.find(dir + "_duplex");
    if (pinned != r.host.end() && duplex != r.host.end() && !duplex->second.empty() &&
        largest_GBps(pinned->second) > 0) {
      link["duplex_fraction"][dir] = largest_GBps(duplex->second) / largest_GBps(pinned->second);
      measured("/host_link/duplex_fraction/" + dir,
               "pinned rate with both directions running at once / rate alone, largest buffer");
    }
  };
  direction("h2d");
  direction("d2h");

  nlohmann::json raw = {{"device", r.device}, {"arch", r.arch}, {"sm_count", r.sm_count},
                        {"free_bytes", r.free_bytes}, {"cuda_runtime", r.cuda_runtime},
                        {"cuda_driver", r.cuda_driver}, {"cublas", r.cublas}};
  raw["gemm"] = nlohmann::json::array();
  for (const auto& g : r.gemm)
    raw["gemm"].push_back({{"dtype", g.dtype}, {"n", g.n}, {"seconds", g.seconds}, {"tflops", g.tflops()}});
  raw["hbm"] = copy_points(r.hbm);
  for (const auto& [k, v] : r.host) raw["host"][k] = copy_points(v);
  raw["peers"] = nlohmann::json::array();
  for (const auto& p : r.peers)
    raw["peers"].push_back({{"src", p.src}, {"dst", p.dst}, {"p2p", p.p2p}, {"bytes", p.bytes},
                            {"seconds", p.seconds}, {"GBps", p.GBps()}});

  nlohmann::json out = {{"format", "protwin.machine-fragment"}, {"version", 1},
                        {"generator", "protwin-probe"}, {"gpu", gpu}};
  if (!link.empty()) out["host_link"] = link;
  out["provenance"] = prov;
  out["raw"] = raw;
  return out;
}

}  // namespace protwin::hw::probe
