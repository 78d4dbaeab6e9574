#include "cli/rank_runs.h"

#include <cmath>
#include <iterator>

#include "sim/calib/sample_stats.h"
#include "traces/error.h"

namespace protwin::cli {

nlohmann::json merge_runs(const std::vector<nlohmann::json>& runs) {
  PROTWIN_ASSERT(!runs.empty(), "merge_runs: no run");
  nlohmann::json out = runs.back();
  const char* const peaks[] = {"peak_device_bytes", "peak_device_reserved_bytes", "peak_pinned_bytes",
                               "peak_pageable_bytes"};
  std::vector<double> steps, waits;
  std::vector<std::vector<double>> peak(std::size(peaks));
  nlohmann::json probes = nlohmann::json::array();
  for (const nlohmann::json& r : runs) {
    const auto it = r.at("iteration_s").get<std::vector<double>>();
    steps.insert(steps.end(), it.begin() + (it.size() > 1 ? 1 : 0), it.end());
    for (size_t k = 0; k < std::size(peaks); ++k) peak[k].push_back(static_cast<double>(r.at(peaks[k]).get<int64_t>()));
    if (r.contains("wait_cpu_share")) waits.push_back(r["wait_cpu_share"].get<double>());
    if (!r.contains("rank_probes")) continue;
    const auto& rp = r["rank_probes"];
    for (size_t k = 0; k < rp.size(); ++k) {
      if (probes.size() <= k) probes.push_back(nlohmann::json::array());
      for (size_t i = rp[k].size() > 1 ? 1 : 0; i < rp[k].size(); ++i) probes[k].push_back(rp[k][i]);
    }
  }
  // A peak is the median run's: a loaded machine skews the ranks and can hold a buffer longer.
  for (size_t k = 0; k < std::size(peaks); ++k) out[peaks[k]] = std::llround(calib::quantile(peak[k], 0.5));
  out["iteration_s"] = steps;
  if (!probes.empty()) out["rank_probes"] = probes;
  if (!waits.empty()) out["wait_cpu_share"] = calib::quantile(waits, 0.5);
  return out;
}

}  // namespace protwin::cli
