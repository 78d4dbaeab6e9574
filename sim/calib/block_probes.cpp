#include "sim/calib/block_probes.h"

#include <algorithm>
#include <cstddef>

#include "hwmodels/hardware_cost_model.h"
#include "sim/calib/sample_stats.h"
#include "sim/engine/plan_simulator.h"
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

void add_rank_block_probes(std::vector<BlockProbes>& ranks, const nlohmann::json& train, const std::string& where) {
  if (!train.contains("rank_block_probes")) return;
  const nlohmann::json& per_rank = train.at("rank_block_probes");
  if (ranks.empty()) ranks.resize(per_rank.size());
  PROTWIN_CHECK(per_rank.size() == ranks.size(), where, ":/rank_block_probes: expected ", ranks.size(),
                " ranks (as the runs before), got ", per_rank.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string at = where + ":/rank_block_probes/" + std::to_string(r);
    const nlohmann::json& series = per_rank[r];
    if (!ranks[r].us.empty()) {
      PROTWIN_CHECK(series.size() == ranks[r].us.size(), at, ": expected ", ranks[r].us.size(),
                    " blocks (as the runs before), got ", series.size());
      for (size_t i = 0; i < series.size(); ++i)
        PROTWIN_CHECK(ranks[r].us.count(series[i].at("signature").get<std::string>()) == 1, at, "/", i,
                      "/signature: a block the runs before did not time");
    }
    for (size_t i = 0; i < series.size(); ++i)  // here, so that the error names this file's pointer
      PROTWIN_CHECK(series[i].at("us").size() == series[0].at("us").size(), at, "/", i, "/us: expected ",
                    series[0].at("us").size(), " runs (one per step, as the series before it), got ",
                    series[i].at("us").size());
    add_block_probes(ranks[r], {{"block_probes", series}}, at);
  }
}

std::vector<double> summed_level(const std::vector<BlockProbes>& ranks, size_t from) {
  std::vector<double> level;
  for (const BlockProbes& r : ranks) {
    const size_t n = r.level_us.size() > from ? r.level_us.size() - from : 0;
    PROTWIN_ASSERT(level.empty() || n == level.size(), "summed_level: ranks with ", n, " and ", level.size(),
                   " samples");
    if (level.empty()) level.assign(n, 0.0);
    for (size_t k = 0; k < n; ++k) level[k] += r.level_us[from + k];
  }
  return level;
}

std::vector<std::vector<double>> rank_sweep_levels(const std::vector<std::vector<std::vector<double>>>& run_levels) {
  if (run_levels.empty() || run_levels[0].empty() || run_levels[0][0].size() < 2) return {};
  const size_t runs = run_levels[0].size(), steps = run_levels[0][0].size();
  for (const auto& plan : run_levels) {
    if (plan.size() != runs) return {};
    for (const auto& run : plan)
      if (run.size() != steps) return {};
  }
  std::vector<std::vector<double>> sweeps;
  for (size_t r = 0; r < runs; ++r)
    for (size_t s = 1; s < steps; ++s) {
      sweeps.emplace_back();
      for (const auto& plan : run_levels) sweeps.back().push_back(plan[r][s]);
    }
  return sweeps;
}

RankBlocksPrediction predict_at_rank_blocks(const traces::Plan& plan, const hw::Machine& machine,
                                            const traces::OpProfile& profile,
                                            const std::vector<sim::ContentionRule>& contention,
                                            const std::vector<BlockProbes>& ranks, double blocks_factor) {
  PROTWIN_ASSERT(!ranks.empty(), "predict_at_rank_blocks: no rank");
  RankBlocksPrediction out;
  for (size_t r = 0; r < ranks.size(); ++r) {
    traces::OpProfile p = with_block_probes(profile, ranks[r]);
    if (blocks_factor != 1) p = with_blocks_scaled(p, blocks_factor);
    traces::Report rep = sim::PlanSimulator(*hw::make_cost_model(machine, &p), contention).run(plan);
    out.rank_s.push_back(rep.iteration.seconds());
    if (r == 0 || out.rank_s[r] > out.rank_s[out.slowest]) {
      out.slowest = r;
      out.report = std::move(rep);
    }
  }
  out.iteration_s = out.rank_s[out.slowest];
  return out;
}

}  // namespace protwin::calib
