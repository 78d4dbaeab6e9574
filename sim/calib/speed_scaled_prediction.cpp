#include "sim/calib/speed_scaled_prediction.h"

#include <cmath>

#include "sim/engine/plan_simulator.h"
#include "traces/error.h"

namespace protwin::calib {

ProbeSpeeds probe_references(const nlohmann::json& prov) {
  auto median = [&](const char* probe, const char* key) {
    return prov.contains(probe) ? prov[probe].value(key, 0.0) : 0.0;
  };
  return {median("reference_probe", "median_gflops"), median("reference_copy_probe", "median_GBps"),
          median("reference_adam_probe", "median_mparams_per_s")};
}

hw::Machine with_capacity(const hw::Machine& m, int64_t bytes) {
  nlohmann::json j = m.json;
  j["gpu"]["memory_bytes"] = bytes;
  j["gpu"]["usable_memory_bytes"] = bytes;
  return hw::machine_from_json(j, m.source);
}

hw::Machine with_link(const hw::Machine& m, const traces::OpProfile* profile, double link) {
  double profiled = 0;
  if (profile && profile->provenance().contains("link_GBps")) profiled = profile->provenance()["link_GBps"].get<double>();
  if (profiled <= 0 || std::abs(profiled - link) < 1e-9) return m;
  nlohmann::json j = m.json;
  for (const char* d : {"h2d", "d2h"})
    for (const char* k : {"pinned_GBps", "pageable_GBps"})
      j["host_link"][d][k] = j["host_link"][d][k].get<double>() * link / profiled;
  j["host_link"]["peak_GBps"] = j["host_link"]["peak_GBps"].get<double>() * link / profiled;
  return hw::machine_from_json(j, m.source);
}

ResourceScales scales_of(const ProbeSpeeds& then, const ProbeSpeeds& ref) {
  PROTWIN_ASSERT(then.gemm_gflops > 0 && then.copy_gbps > 0 && then.adam_mparams_per_s > 0 && ref.gemm_gflops > 0 &&
                     ref.copy_gbps > 0 && ref.adam_mparams_per_s > 0,
                 "scales_of needs positive probe speeds");
  return {ref.gemm_gflops / then.gemm_gflops, ref.copy_gbps / then.copy_gbps,
          ref.adam_mparams_per_s / then.adam_mparams_per_s};
}

hw::Machine scaled_machine(const hw::Machine& base, const std::map<std::string, double>& s) {
  nlohmann::json j = base.json;
  const double c = s.at("compute");
  for (auto& d : j["gpu"]["compute"]) {  // each dtype's rates
    d["peak_tflops"] = d["peak_tflops"].get<double>() / c;
    d["sustained_tflops"] = d["sustained_tflops"].get<double>() / c;
    if (d.contains("gemm_curve"))
      for (auto& y : d["gemm_curve"]["tflops"]) y = y.get<double>() / c;
  }
  auto& hbm = j["gpu"]["hbm"];
  hbm["peak_GBps"] = hbm["peak_GBps"].get<double>() / c;
  hbm["achievable_GBps"] = hbm["achievable_GBps"].get<double>() / c;
  for (auto& y : hbm["curve"]["GBps"]) y = y.get<double>() / c;
  j["gpu"]["launch_floor_us"] = j["gpu"]["launch_floor_us"].get<double>() * c;
  for (const char* dir : {"h2d", "d2h"}) {
    auto& d = j["host_link"][dir];
    d["pinned_GBps"] = d["pinned_GBps"].get<double>() / s.at(dir);
    d["pageable_GBps"] = d["pageable_GBps"].get<double>() / s.at(dir);
  }
  auto& a = j["cpu_adam"];
  a["per_core_params_per_s"] = a["per_core_params_per_s"].get<double>() / s.at("cpu_optim");
  // host DRAM only serves CPU Adam in the cost model; dram_efficiency must stay a fraction.
  for (const char* k : {"dram_GBps", "dram_peak_GBps"}) j["host"][k] = j["host"][k].get<double>() / s.at("cpu_optim");
  a["fixed_overhead_us"] = a["fixed_overhead_us"].get<double>() * s.at("cpu_optim");
  // Host dispatch is the host CPU's work, whatever the device does: on the emulated device the
  // runtime's stream threads and CPU Adam share the host's cores, on a GPU machine the host thread
  // runs on the CPU Adam's cores too. It follows the CPU probe, not the GEMM's.
  if (j.contains("host_dispatch"))
    for (auto& [key, v] : j["host_dispatch"].items())
      if (key.size() > 3 && key.compare(key.size() - 3, 3, "_us") == 0) v = v.get<double>() * s.at("cpu_optim");
  return hw::machine_from_json(j, base.source + " (scaled)");
}

SpeedScaledPredictor::SpeedScaledPredictor(traces::Plan plan, hw::Machine machine, const traces::OpProfile* profile,
                                           std::vector<sim::ContentionRule> contention)
    : plan_(std::move(plan)), machine_(std::move(machine)), profile_(profile), contention_(std::move(contention)) {}

double SpeedScaledPredictor::iteration_s(const ResourceScales& s) {
  PROTWIN_ASSERT(s.compute > 0 && s.copy > 0 && s.cpu > 0, "SpeedScaledPredictor: scales must be > 0");
  constexpr double kStep = 0.005;  // 0.5 % in log space
  auto bin = [](double x) { return std::lround(std::log(x) / kStep); };
  const auto key = std::make_tuple(bin(s.compute), bin(s.copy), bin(s.cpu));
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto unbin = [](long b) { return std::exp(static_cast<double>(b) * kStep); };
  const double c = unbin(std::get<0>(key)), l = unbin(std::get<1>(key)), a = unbin(std::get<2>(key));
  const hw::Machine m = scaled_machine(machine_, {{"compute", c}, {"h2d", l}, {"d2h", l}, {"cpu_optim", a}});
  const auto cost = hw::make_cost_model(m, profile_, c);
  const double t = sim::PlanSimulator(*cost, contention_).run(plan_).iteration.seconds();
  cache_[key] = t;
  return t;
}

double at_reference_speeds(double raw_s, double predicted_reference_s, double predicted_then_s) {
  PROTWIN_ASSERT(raw_s > 0 && predicted_reference_s > 0 && predicted_then_s > 0,
                 "at_reference_speeds needs positive times");
  return raw_s * predicted_reference_s / predicted_then_s;
}

}  // namespace protwin::calib
