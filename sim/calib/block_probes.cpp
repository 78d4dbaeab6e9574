#include "sim/calib/block_probes.h"

#include <cstddef>

#include "sim/calib/sample_stats.h"
#include "traces/block_signature.h"
#include "traces/error.h"

namespace protwin::calib {

void add_block_probes(BlockProbes& into, const nlohmann::json& interleave, const std::string& where) {
  if (!interleave.contains("block_probes")) return;
  const nlohmann::json& series = interleave.at("block_probes");
  std::vector<std::vector<double>> runs;
  for (size_t i = 0; i < series.size(); ++i) {
    runs.push_back(series[i].at("us").get<std::vector<double>>());
    PROTWIN_CHECK(runs[i].size() == runs[0].size(), where, ":/block_probes/", i, "/us: expected ", runs[0].size(),
                  " runs (one per step, as the series before it), got ", runs[i].size());
  }
  const size_t first = into.level_us.size();
  into.level_us.resize(first + (runs.empty() ? 0 : runs[0].size()), 0.0);
  for (size_t i = 0; i < runs.size(); ++i) {
    auto& all = into.us[series[i].at("signature").get<std::string>()];
    all.insert(all.end(), runs[i].begin(), runs[i].end());
    for (size_t k = 0; k < runs[i].size(); ++k) into.level_us[first + k] += runs[i][k];
  }
  if (runs.empty() || !interleave.contains("steps") || !interleave.contains("plans")) return;
  const size_t steps = interleave.at("steps").get<size_t>(), plans = interleave.at("plans").size();
  PROTWIN_CHECK(runs[0].size() == steps * plans, where, ":/block_probes/0/us: expected ", steps * plans,
                " runs (", steps, " steps of ", plans, " plans), got ", runs[0].size());
  for (size_t s = 1; s < steps; ++s)  // the first sweep is every plan's warm-up step
    into.sweep_level_us.emplace_back(into.level_us.begin() + static_cast<std::ptrdiff_t>(first + s * plans),
                                     into.level_us.begin() + static_cast<std::ptrdiff_t>(first + (s + 1) * plans));
}

traces::OpProfile with_block_probes(const traces::OpProfile& profile, const BlockProbes& probes) {
  return traces::with_block_times(profile, [&](const traces::OpProfileEntry& e) -> std::optional<double> {
    const auto it = probes.us.find(e.sig.key());
    if (it == probes.us.end() || it->second.empty()) return std::nullopt;
    return quantile(it->second, 0.5);
  });
}

traces::OpProfile with_blocks_scaled(const traces::OpProfile& profile, double factor) {
  return traces::with_block_times(profile, [&](const traces::OpProfileEntry& e) -> std::optional<double> { return e.us.mean * factor; });
}

}  // namespace protwin::calib
