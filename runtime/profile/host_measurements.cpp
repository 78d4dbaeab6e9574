#include "runtime/profile/host_measurements.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "traces/error.h"

namespace protwin::rt {

std::vector<RatePoint> monotone_curve(std::vector<RatePoint> pts, const std::string& what) {
  pts.erase(std::remove_if(pts.begin(), pts.end(),
                           [](const RatePoint& p) { return !(p.x > 0) || !(p.y > 0) || !std::isfinite(p.y); }),
            pts.end());
  PROTWIN_CHECK(!pts.empty(), what, ": no valid measurement");
  std::stable_sort(pts.begin(), pts.end(), [](const RatePoint& a, const RatePoint& b) { return a.x < b.x; });
  std::vector<RatePoint> out;
  std::vector<int> n;
  for (const auto& p : pts) {
    if (!out.empty() && p.x == out.back().x) {
      out.back().y += p.y;
      ++n.back();
    } else {
      out.push_back(p);
      n.push_back(1);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].y /= n[i];
  return out;
}

namespace {

nlohmann::json curve(const std::vector<RatePoint>& pts, const char* xk, const char* yk) {
  nlohmann::json x = nlohmann::json::array(), y = nlohmann::json::array();
  for (const auto& p : pts) {
    x.push_back(p.x);
    y.push_back(p.y);
  }
  return {{xk, x}, {yk, y}};
}

nlohmann::json prov(const std::string& kind, const std::string& source, const std::string& note = "") {
  nlohmann::json p = {{"kind", kind}, {"source", source}};
  if (!note.empty()) p["note"] = note;
  return p;
}

double max_y(const std::vector<RatePoint>& pts) {
  double m = 0;
  for (const auto& p : pts) m = std::max(m, p.y);
  return m;
}

}  // namespace

nlohmann::json machine_json(const HostMeasurements& m, const std::string& name) {
  PROTWIN_CHECK(m.cores >= 1, "profile: cores must be >= 1");
  const auto gemm = monotone_curve(m.gemm, "profile: GEMM curve");
  const auto mem = monotone_curve(m.memory, "profile: memory-bandwidth curve");
  const auto copy = monotone_curve(m.copy_size, "profile: copy-size curve");
  PROTWIN_CHECK(m.h2d_GBps > 0 && m.d2h_GBps > 0, "profile: copy rates must be > 0");
  PROTWIN_CHECK(m.adam_params_per_s_1t > 0 && m.adam_params_per_s_all > 0, "profile: CPU Adam rates must be > 0");
  const double sustained = gemm.back().y;  // the largest GEMM measured
  const double gemm_peak = std::max(max_y(gemm), sustained);
  const double hbm = mem.back().y;  // the largest size: DRAM, not cache
  // DRAM delivers at least what the all-core CPU Adam moved (28 B/param).
  const double dram = std::max({m.dram_GBps, hbm, m.adam_params_per_s_all * 28e-9});
  const double link_peak = std::max(m.h2d_GBps, m.d2h_GBps);
  const double floor_us = std::max(m.launch_floor_us, 0.1);
  // CPU Adam: the cost model takes min(cores x per-core rate, efficiency x DRAM / bytes); the
  // all-core measurement sets the DRAM term so both the 1-thread and the all-core rate are kept.
  const double bytes_per_param = 28;
  const double adam_eff = std::min(1.0, m.adam_params_per_s_all * bytes_per_param / (dram * 1e9));
  const std::string src = "protwin profile (runtime/profile/) on this host, " + m.when;
  const std::string assumed = "not measurable on a one-rank emulated device; kept from the placeholder";
  nlohmann::json fp32 = {{"peak_tflops", gemm_peak}, {"sustained_tflops", sustained},
                         {"gemm_curve", curve(gemm, "gflop", "tflops")}};
  nlohmann::json other = {{"peak_tflops", gemm_peak}, {"sustained_tflops", sustained}};
  nlohmann::json j = {
      {"format", "protwin.machine"},
      {"version", 1},
      {"name", name},
      {"description", "This host used as an emulated device (runtime's CPU device with a byte-accounted "
                      "device pool, " + std::to_string(m.compute_threads) + " compute thread(s), copy workers "
                      "throttled to " + (m.link_throttle_GBps > 0 ? std::to_string(m.link_throttle_GBps) + " GB/s"
                                                                 : std::string("memcpy speed")) +
                      "), measured by `protwin profile`"},
      {"gpu",
       {{"name", "emulated (host CPU)"},
        {"count", 1},
        {"memory_bytes", int64_t{4294967296}},
        {"usable_memory_bytes", int64_t{4294967296}},
        {"p2p", false},
        {"compute", {{"fp32", fp32}, {"fp16", other}, {"bf16", other}}},
        {"hbm", {{"peak_GBps", std::max(hbm, max_y(mem))}, {"achievable_GBps", hbm}, {"curve", curve(mem, "bytes", "GBps")}}},
        {"launch_floor_us", floor_us},
        {"allocator",
         {{"round_bytes", 512}, {"small_alloc_max_bytes", 1048576}, {"small_segment_bytes", 2097152},
          {"mid_alloc_max_bytes", 10485760}, {"large_segment_bytes", 20971520}, {"large_round_bytes", 2097152},
          {"cuda_malloc_us", 100.0}, {"cuda_free_us", 14.0}, {"fragmentation_fraction", 0.1}}}}},
      {"host",
       {{"cpu", m.cpu.empty() ? std::string("unknown") : m.cpu},
        {"sockets", 1},
        {"cores", m.cores},
        {"memory_bytes", m.memory_bytes},
        {"dram_peak_GBps", dram},
        {"dram_GBps", dram}}},
      {"host_link",
       {{"name", "memcpy workers"},
        {"peak_GBps", link_peak},
        {"h2d", {{"pinned_GBps", m.h2d_GBps}, {"pageable_GBps", m.h2d_GBps},
                 {"pinned_latency_us", m.h2d_latency_us}, {"pageable_latency_us", m.h2d_latency_us}}},
        {"d2h", {{"pinned_GBps", m.d2h_GBps}, {"pageable_GBps", m.d2h_GBps},
                 {"pinned_latency_us", m.d2h_latency_us}, {"pageable_latency_us", m.d2h_latency_us}}},
        {"duplex_fraction", {{"h2d", m.duplex_fraction}, {"d2h", m.duplex_fraction}}},
        {"size_curve", curve(copy, "bytes", "fraction")}}},
      {"cpu_adam",
       {{"per_core_params_per_s", m.adam_params_per_s_1t},
        {"dram_efficiency", adam_eff},
        {"bytes_per_param", bytes_per_param},
        {"fixed_overhead_us", m.adam_fixed_us},
        {"torch_slowdown", m.adam_torch_slowdown > 0 ? m.adam_torch_slowdown : 5.8}}},
      {"gpu_adam", {{"bytes_per_param", 32}}},
      {"collectives",
       {{"intra_node",
         {{"host_staged", true},
          {"all_reduce", {{"alpha_us", 10.0}, {"busbw_GBps", 4.0}}},
          {"reduce_scatter", {{"alpha_us", 10.0}, {"busbw_GBps", 4.0}}},
          {"all_gather", {{"alpha_us", 10.0}, {"busbw_GBps", 4.0}}},
          {"broadcast", {{"alpha_us", 10.0}, {"busbw_GBps", 4.0}}}}}}},
  };
  // No host thread issues the emulated device's work: each stream's thread runs its own ops, so
  // the runtime's own costs are the only host dispatch (hwmodels/machine.h).
  if (m.runtime_op_us > 0 || m.runtime_step_us > 0)
    j["host_dispatch"] = {{"host_thread", false},       {"runtime_op_us", m.runtime_op_us},
                          {"runtime_step_us", m.runtime_step_us}, {"eager_op_us", 0.0},
                          {"eager_op_autograd_us", 0.0}, {"backward_op_us", 0.0},
                          {"kernel_launch_us", 0.0},    {"copy_call_us", 0.0},
                          {"collective_call_us", 0.0},  {"optimizer_launch_us", 0.0},
                          {"module_hook_us", 0.0},      {"launch_queue_depth", 1024}};
  if (m.overflow_scan_ns_per_elem > 0 && m.unscale_ns_per_elem > 0 && m.fp16_copy_ns_per_elem > 0)
    j["host_passes"] = {{"overflow_scan_ns_per_elem", m.overflow_scan_ns_per_elem},
                        {"unscale_ns_per_elem", m.unscale_ns_per_elem},
                        {"fp16_copy_ns_per_elem", m.fp16_copy_ns_per_elem}};
  char slow[256];
  std::snprintf(slow, sizeof slow,
                "measured contention (not in the cost model): a GEMM runs %.2fx slower beside both copy workers, "
                "%.2fx beside CPU Adam; a throttled copy %.2fx, CPU Adam %.2fx slower beside compute",
                m.compute_slowdown_with_copies, m.compute_slowdown_with_adam, m.copy_slowdown_with_compute,
                m.adam_slowdown_with_compute);
  j["provenance"] = {
      {"/gpu", prov("measured", src, "fp32 ATen ops with " + std::to_string(m.compute_threads) +
                                         " intra-op thread(s) (the runtime's compute split when a plan offloads); " + slow)},
      {"/gpu/memory_bytes", prov("assumed", "the emulated device's capacity is set per plan (meta.pools)")},
      {"/gpu/usable_memory_bytes", prov("assumed", "the emulated device's capacity is set per plan (meta.pools)")},
      {"/gpu/compute/fp16", prov("assumed", "the runtime is fp32 only; copied from the fp32 measurement")},
      {"/gpu/compute/bf16", prov("assumed", "the runtime is fp32 only; copied from the fp32 measurement")},
      {"/gpu/allocator", prov("assumed", assumed, "no caching allocator on the emulated device")},
      {"/host", prov("measured", src, "cores: std::thread::hardware_concurrency; memory: sysconf; DRAM: "
                                      "elementwise add over 64 MiB tensors, all cores")},
      {"/host/sockets", prov("assumed", "one socket (KVM guest)")},
      {"/host_link", prov("measured", src, "runtime CopyEngine (memcpy in 1 MiB slices) throttled to " +
                                               std::to_string(m.link_throttle_GBps) + " GB/s; pageable = pinned "
                                               "(the emulated device copies plain memory)")},
      {"/cpu_adam", prov("measured", src, "adam_step_cpu: per-core rate with 1 thread, dram_efficiency from the "
                                          "all-core rate x 28 B/param over dram_GBps")},
      {"/cpu_adam/bytes_per_param", prov("derived", "runtime/optim/cpu_adam.h: reads p, g, m, v, writes p, m, v")},
      {"/cpu_adam/torch_slowdown",
       m.adam_torch_slowdown > 0
           ? prov("measured", src, "runtime/optim/bench_adam: torch::optim::Adam vs adam_step_cpu, 1 thread, 4M params")
           : prov("derived", "DS: deepspeedai/DeepSpeed PR #378 (shared/hardware/hardware.md §3.5)",
                  "DeepSpeedCPUAdam is 5.1-6.5x faster than torch.optim.Adam on CPU; 5.8 is the middle")},
      {"/gpu_adam", prov("derived", "runtime/optim/device_adam: the emulated device runs the same SIMD kernel",
                         "32 B/param as the GPU machines")},
      {"/collectives", prov("assumed", assumed, "the runtime refuses plans with more than one rank")},
  };
  if (!m.collectives.empty()) {
    // The runtime's own collectives: each its own MPI transfer beside the copies, never staged
    // through the copy links (sim/calib/rank_machine.h).
    nlohmann::json& intra = j["collectives"]["intra_node"];
    intra["host_staged"] = false;
    for (const auto& [kind, f] : m.collectives) intra[kind] = {{"alpha_us", f.alpha_us}, {"busbw_GBps", f.busbw_GBps}};
    nlohmann::json rows = nlohmann::json::array();
    for (const CollectiveRow& r : m.collective_rows) rows.push_back({r.kind, r.bus_bytes, r.seconds});
    j["provenance"]["/collectives"] = prov(
        "measured", src,
        "runtime/profile/collective_probe.h: RankGroup's collectives on " + std::to_string(m.collective_ranks) +
            " ranks under --net-GBps " + std::to_string(m.collective_net_GBps) +
            ", median per size; alpha and busbw by least squares per kind; rows [kind, bus bytes, s]: " + rows.dump());
  }
  if (j.contains("host_dispatch"))
    j["provenance"]["/host_dispatch"] = prov("measured", src, "runtime/profile/runtime_overhead.h: chains of 4 and 64 "
                                                              "empty ops through the runtime's executor, median of 15 "
                                                              "steps each; per op the slope, per step the intercept; "
                                                              "no separate host thread");
  if (j.contains("host_passes"))
    j["provenance"]["/host_passes"] = prov("measured", src, "runtime/optim/host_passes.h over 4M fp32 elements, " +
                                                                std::to_string(m.compute_threads) +
                                                                " compute thread(s), caches flushed");
  return j;
}

}  // namespace protwin::rt
