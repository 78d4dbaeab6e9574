#include "cli/rank_runs.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "sim/calib/sample_stats.h"
#include "traces/error.h"
#include "traces/kernel_kinds.h"

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

nlohmann::json rank_breakdown(const std::vector<traces::Report>& reps) {
  nlohmann::json out = nlohmann::json::array();
  if (reps.empty()) return out;
  const size_t n = reps[0].ops.size();
  std::vector<int64_t> base;
  for (size_t k = 0; k < reps.size(); ++k) {
    const traces::Report& r = reps[k];
    PROTWIN_CHECK(r.ops.size() == n, "rank ", k, "'s report has ", r.ops.size(), " ops, rank 0's ", n,
                  ": not the same plan");
    PROTWIN_CHECK(r.meta.contains("steady_start_ns") && r.meta["steady_start_ns"].is_number_integer(), "rank ", k,
                  "'s report has no meta.steady_start_ns (written by protwin train --rank-reports)");
    base.push_back(r.meta["steady_start_ns"].get<int64_t>());
  }
  for (size_t k = 0; k < reps.size(); ++k) {
    const traces::Report& r = reps[k];
    nlohmann::json busy = nlohmann::json::object();
    for (const auto& st : r.streams) busy[st.name] = st.busy.seconds();
    int64_t wait = 0, transfer = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!traces::is_collective_kind(r.ops[i].kind)) continue;
      int64_t last = 0;  // when the last rank arrived at this collective
      for (size_t q = 0; q < reps.size(); ++q) last = std::max(last, base[q] + reps[q].ops[i].start.ns);
      const int64_t mine = base[k] + r.ops[i].start.ns, end = base[k] + r.ops[i].end.ns;
      wait += std::max<int64_t>(0, std::min(end, last) - mine);
      transfer += std::max<int64_t>(0, end - std::max(last, mine));
    }
    out.push_back({{"rank", k},
                   {"iteration_s", r.iteration.seconds()},
                   {"start_offset_s", 1e-9 * static_cast<double>(base[k] - base[0])},
                   {"busy_s", busy},
                   {"collective_wait_s", 1e-9 * static_cast<double>(wait)},
                   {"collective_transfer_s", 1e-9 * static_cast<double>(transfer)}});
  }
  return out;
}

}  // namespace protwin::cli
