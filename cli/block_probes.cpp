#include "cli/block_probes.h"

#include "cli/sample_stats.h"
#include "traces/block_signature.h"
#include "traces/error.h"

namespace protwin::cli {

void add_block_probes(BlockProbes& into, const nlohmann::json& interleave, const std::string& where) {
  if (!interleave.contains("block_probes")) return;
  const nlohmann::json& series = interleave.at("block_probes");
  size_t runs = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    const auto us = series[i].at("us").get<std::vector<double>>();
    PROTWIN_CHECK(i == 0 || us.size() == runs, where, ":/block_probes/", i, "/us: expected ", runs,
                  " runs (one per step, as the series before it), got ", us.size());
    runs = us.size();
  }
  const size_t first = into.level_us.size();
  into.level_us.resize(first + runs, 0.0);
  for (const nlohmann::json& s : series) {
    const auto us = s.at("us").get<std::vector<double>>();
    auto& all = into.us[s.at("signature").get<std::string>()];
    all.insert(all.end(), us.begin(), us.end());
    for (size_t k = 0; k < us.size(); ++k) into.level_us[first + k] += us[k];
  }
}

namespace {

traces::OpProfile with_block_times(const traces::OpProfile& profile,
                                   const std::function<std::optional<double>(const traces::OpProfileEntry&)>& us) {
  traces::OpProfile out;
  out.set_device(profile.device());
  out.set_provenance(profile.provenance());
  for (traces::OpProfileEntry e : profile.entries()) {
    if (traces::block_shape_of(e.sig))
      if (const std::optional<double> t = us(e)) {
        e.us = traces::OpTimeStats{};
        e.us.add(*t);
      }
    out.add(std::move(e));
  }
  return out;
}

}  // namespace

traces::OpProfile with_block_probes(const traces::OpProfile& profile, const BlockProbes& probes) {
  return with_block_times(profile, [&](const traces::OpProfileEntry& e) -> std::optional<double> {
    const auto it = probes.us.find(e.sig.key());
    if (it == probes.us.end() || it->second.empty()) return std::nullopt;
    return quantile(it->second, 0.5);
  });
}

traces::OpProfile with_blocks_scaled(const traces::OpProfile& profile, double factor) {
  return with_block_times(profile, [&](const traces::OpProfileEntry& e) -> std::optional<double> { return e.us.mean * factor; });
}

}  // namespace protwin::cli
