#include "sim/calib/case_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "sim/calib/calibration.h"
#include "sim/calib/sample_stats.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/runtime_memory.h"
#include "traces/block_signature.h"
#include "traces/error.h"

namespace protwin::calib {

double relative_error(double p, double m) { return m > 0 ? (p - m) / m : 0; }

SimulatedCase simulate_case(const sim::Workload& w, const hw::HardwareCostModel& cost, const sim::offload::OffloadKnobs& k) {
  SimulatedCase s;
  const sim::offload::Candidate c = sim::offload::evaluate(w, cost, 1, k, &s.plan, &s.report);
  PROTWIN_CHECK(c.simulated, "calibrate: a selected plan no longer simulates: ", c.failure);
  s.iteration_s = s.report.iteration.seconds();
  for (const char* st : kCaseStreams)
    if (const auto* r = s.report.stream(st)) s.busy[st] = r->busy.seconds();
  for (const char* p : kCasePools)
    if (const auto* r = s.report.pool(p)) s.peak[p] = r->peak.n;
  s.peak["gpu_plan"] = s.peak["gpu"];
  s.peak["gpu"] = sim::offload::predict_runtime_memory(s.plan.plan, s.report).allocated_peak_bytes;
  return s;
}

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

nlohmann::json CaseMetrics::to_json() const {
  return {{"cases", n},
          {"iteration_time_mape", mape},
          {"iteration_time_max_error", max_error},
          {"iteration_time_mean_error", mean_error},
          {"spearman", spearman},
          {"peak_memory_mape", peak_mape},
          {"peak_host_memory_mape", host_peak_mape},
          {"best_predicted_is_best_measured", best_is_best},
          {"best_predicted_measured_gap", best_gap}};
}

CaseMetrics case_metrics(const std::vector<const CaseOutcome*>& cs, double CaseOutcome::*predicted) {
  CaseMetrics m;
  std::vector<double> p, q, pp, qp, ph, qh;
  auto host = [](const std::map<std::string, int64_t>& m) {
    double s = 0;
    for (const char* pool : {"pinned", "pageable"}) s += m.count(pool) ? static_cast<double>(m.at(pool)) : 0;
    return s;
  };
  for (const auto* c : cs) {
    ph.push_back(host(c->pred_peak));
    qh.push_back(host(c->meas_peak));
    p.push_back(c->*predicted);
    q.push_back(c->measured_s);
    pp.push_back(static_cast<double>(c->pred_peak.count("gpu") ? c->pred_peak.at("gpu") : 0));
    qp.push_back(static_cast<double>(c->meas_peak.count("gpu") ? c->meas_peak.at("gpu") : 0));
  }
  m.n = p.size();
  if (p.empty()) return m;
  const std::vector<double> it = iteration_metrics(p, q);
  m.mape = it[kMape];
  m.max_error = it[kMaxError];
  m.spearman = it[kSpearman];
  m.best_gap = it[kBestGap];
  for (size_t i = 0; i < p.size(); ++i) m.mean_error += relative_error(p[i], q[i]) / static_cast<double>(p.size());
  m.peak_mape = mape(pp, qp);
  if (std::all_of(qh.begin(), qh.end(), [](double x) { return x > 0; })) m.host_peak_mape = mape(ph, qh);
  m.best_is_best = std::min_element(p.begin(), p.end()) - p.begin() == std::min_element(q.begin(), q.end()) - q.begin();
  return m;
}

double plan_bytes_mape(const std::vector<const CaseOutcome*>& cases) {
  std::vector<double> p, q;
  for (const CaseOutcome* r : cases) {
    if (!r->pred_peak.count("gpu_plan") || !r->meas_peak.count("gpu")) continue;
    p.push_back(static_cast<double>(r->pred_peak.at("gpu_plan")));
    q.push_back(static_cast<double>(r->meas_peak.at("gpu")));
  }
  return p.empty() ? 0 : mape(p, q);
}

std::string diagnosis(const CaseOutcome& c, double tol) {
  std::vector<std::pair<double, std::string>> off;
  char buf[96];
  for (const auto& [st, m] : c.meas_busy) {
    const double p = c.pred_busy.count(st) ? c.pred_busy.at(st) : 0;
    if (std::abs(p - m) < 0.02 * c.measured_s) continue;  // too small to matter for the iteration
    const double e = m > 0 ? relative_error(p, m) : 1;
    if (std::abs(e) > tol) {
      std::snprintf(buf, sizeof buf, "%s %+.0f%%", st.c_str(), 100 * e);
      off.push_back({std::abs(e), buf});
    }
  }
  for (const auto& [pool, m] : c.meas_peak) {
    const double p = static_cast<double>(c.pred_peak.count(pool) ? c.pred_peak.at(pool) : 0);
    if (m <= 0) continue;
    const double e = relative_error(p, static_cast<double>(m));
    if (std::abs(e) > tol) {
      std::snprintf(buf, sizeof buf, "pool %s %+.0f%%", pool.c_str(), 100 * e);
      off.push_back({std::abs(e), buf});
    }
  }
  std::sort(off.begin(), off.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s;
  for (const auto& o : off) s += (s.empty() ? "" : ", ") + o.second;
  return s.empty() ? "-" : s;
}

std::map<std::string, double> fit_stream_scales(const std::vector<const CaseOutcome*>& train) {
  std::map<std::string, double> scale;
  for (const char* st : kCaseStreams) {
    double p = 0, q = 0;
    for (const auto* c : train) {
      p += c->pred_busy.count(st) ? c->pred_busy.at(st) : 0;
      q += c->meas_busy.count(st) ? c->meas_busy.at(st) : 0;
    }
    scale[st] = p > 1e-6 && q > 1e-6 ? q / p : 1.0;
  }
  return scale;
}

}  // namespace protwin::calib
