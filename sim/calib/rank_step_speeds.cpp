#include "sim/calib/rank_step_speeds.h"

#include "sim/calib/calibration.h"
#include "traces/error.h"

namespace protwin::calib {

std::vector<RankProbes> rank_probes_of(const nlohmann::json& interleave) {
  const nlohmann::json& plans = interleave.at("plans");
  PROTWIN_CHECK(!plans.empty() && plans[0].contains("ranks"),
                "protwin interleave output: no per-rank probes (plans/0/ranks; run it under mpirun -np N)");
  const size_t n = plans[0]["ranks"].at("gemm_before_gflops").size();
  std::vector<RankProbes> out(n);
  for (const nlohmann::json& p : plans) {
    const nlohmann::json& r = p.at("ranks");
    const std::pair<const char*, std::vector<std::vector<double>> RankProbes::*> series[] = {
        {"gemm_before_gflops", &RankProbes::gemm_before},       {"gemm_after_gflops", &RankProbes::gemm_after},
        {"copy_before_GBps", &RankProbes::copy_before},         {"copy_after_GBps", &RankProbes::copy_after},
        {"adam_before_mparams_per_s", &RankProbes::adam_before}, {"adam_after_mparams_per_s", &RankProbes::adam_after}};
    for (const auto& [key, member] : series) {
      const auto per_rank = r.at(key).get<std::vector<std::vector<double>>>();
      PROTWIN_CHECK(per_rank.size() == n, "protwin interleave output: plans/*/ranks/", key, ": expected ", n,
                    " ranks, got ", per_rank.size());
      for (size_t k = 0; k < n; ++k) (out[k].*member).push_back(per_rank[k]);
    }
  }
  return out;
}

std::vector<std::vector<std::vector<ResourceScales>>> rank_step_scales(const std::vector<RankProbes>& ranks,
                                                                       const ProbeSpeeds& reference,
                                                                       size_t half_window) {
  PROTWIN_ASSERT(!ranks.empty() && !ranks[0].gemm_before.empty(), "rank_step_scales needs every rank's probes");
  const size_t plans = ranks[0].gemm_before.size(), steps = ranks[0].gemm_before[0].size();
  std::vector<std::vector<std::vector<ResourceScales>>> out(
      plans, std::vector<std::vector<ResourceScales>>(steps, std::vector<ResourceScales>(ranks.size())));
  for (size_t k = 0; k < ranks.size(); ++k) {
    const RankProbes& r = ranks[k];
    const auto gemm = step_speeds(r.gemm_before, r.gemm_after, half_window);
    const auto copy = step_speeds(r.copy_before, r.copy_after, half_window);
    const auto adam = step_speeds(r.adam_before, r.adam_after, half_window);
    for (size_t i = 0; i < plans; ++i)
      for (size_t s = 0; s < steps; ++s)
        out[i][s][k] = scales_of({gemm[i][s], copy[i][s], adam[i][s]}, reference);
  }
  return out;
}

}  // namespace protwin::calib
