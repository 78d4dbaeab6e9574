#include "sim/calib/case_prediction.h"

#include <string>

#include "sim/calib/sample_stats.h"
#include "traces/block_signature.h"

namespace protwin::calib {

traces::OpProfile pooled_profile(const traces::OpProfile& pooled, const std::vector<traces::OpProfile>& rounds,
                                 const BlockProbes& probes, traces::OpProfile* profile_blocks) {
  // The rounds' contention factors, each the median over rounds; the pooled op timings.
  nlohmann::json prov = pooled.provenance();
  for (const char* factor : {"compute_slowdown_with_copies", "compute_slowdown_with_adam", "adam_slowdown_with_compute"}) {
    std::vector<double> per_round;
    for (const traces::OpProfile& r : rounds) per_round.push_back(r.provenance().at("contention").at(factor).get<double>());
    prov["contention"][factor] = quantile(per_round, 0.5);
  }
  const std::string first_note = rounds.empty() ? "" : rounds[0].provenance().value("note", "");
  prov["note"] = first_note + "; pooled over " + std::to_string(rounds.size()) +
                 " profiles interleaved with protwin calibrate's rounds (contention: medians)";
  traces::OpProfile p = pooled;
  p.set_provenance(prov);
  // Each block at the median of its runs beside the steps, sampled over the same stretch of time as
  // the steps (sim/calib/block_probes.h); the profiles' medians stay for the record.
  if (profile_blocks) *profile_blocks = traces::with_block_medians(p, rounds);
  return probes.us.empty() ? p : with_block_probes(p, probes);
}

std::vector<CasePrediction> predict_cases(const sim::Workload& w, const hw::Machine& machine,
                                          const traces::OpProfile* profile, const traces::OpProfile* profile_blocks,
                                          const std::vector<sim::offload::OffloadKnobs>& cases,
                                          const std::vector<sim::ContentionRule>& contention) {
  const auto cost = hw::make_cost_model(machine, profile);
  const traces::OpProfile kernels_only = profile ? traces::without_blocks(*profile) : traces::OpProfile();
  const auto kernels_cost = hw::make_cost_model(machine, profile ? &kernels_only : nullptr);
  const bool sampled_blocks = profile && profile_blocks;
  const traces::OpProfile blocks_up = sampled_blocks ? with_blocks_scaled(*profile, kBlockStep) : traces::OpProfile();
  const auto blocks_up_cost = hw::make_cost_model(machine, sampled_blocks ? &blocks_up : nullptr);
  const auto profile_blocks_cost = hw::make_cost_model(machine, sampled_blocks ? profile_blocks : nullptr);
  for (const auto* c : {&cost, &kernels_cost, &blocks_up_cost, &profile_blocks_cost}) (*c)->set_contention(contention);
  std::vector<CasePrediction> out;
  for (const sim::offload::OffloadKnobs& k : cases) {
    CasePrediction p;
    p.sim = simulate_case(w, *cost, k);
    p.kernels_predicted_s = simulate_case(w, *kernels_cost, k).iteration_s;
    p.block_sensitivity =
        sampled_blocks ? (simulate_case(w, *blocks_up_cost, k).iteration_s / p.sim.iteration_s - 1) /
                             (kBlockStep - 1)
                       : 0;
    p.profile_blocks_predicted_s =
        sampled_blocks ? simulate_case(w, *profile_blocks_cost, k).iteration_s : p.sim.iteration_s;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace protwin::calib
