#include "sim/calib/rank_cases.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "sim/calib/calibration.h"
#include "sim/calib/case_comparison.h"
#include "sim/calib/sample_stats.h"
#include "sim/engine/joint_ranks.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/runtime_memory.h"

namespace protwin::calib {
namespace {

// The joint simulation of the ranks (sim/engine/joint_ranks.h): each rank's ops priced at its own
// probed speeds, collectives as rendezvous, the machine's host cores (machine host.cores) shared by
// every rank's compute threads (the run's split), CPU Adam thread and a rank polling in MPI while
// it waits (the share of a core the run measured, train --probes). Nothing in it is fitted to the
// measured steps: the speeds are the probes', the base times the profile's, the cores the machine
// file's.
sim::JointRanks simulate_ranks(const traces::Plan& plan, const hw::Machine& base, const traces::OpProfile* profile,
                               const std::vector<ResourceScales>& scales, int compute_threads, double wait_cpu_share) {
  std::vector<std::unique_ptr<hw::HardwareCostModel>> models;
  std::vector<const hw::CostModel*> ranks;
  for (const ResourceScales& sc : scales) {
    const hw::Machine sm =
        scaled_machine(base, {{"compute", sc.compute}, {"h2d", sc.copy}, {"d2h", sc.copy}, {"cpu_optim", sc.cpu}});
    models.push_back(hw::make_cost_model(sm, profile, sc.compute));
    ranks.push_back(models.back().get());
  }
  sim::SharedCores cores;
  cores.cores = base.json.at("host").value("cores", 0);
  cores.threads = {{"compute", std::max(1, compute_threads)}, {"cpu_optim", 1}};  // ThreadSplit: Adam 1 thread
  cores.wait_threads = wait_cpu_share;  // measured by the run (train --probes: runtime/comm/wait_probe.h)
  // A rank's busy collective stream: the rank profile timed compute s times slower beside it with
  // every rank's compute and collectives alike, the compute threads filling the cores (ThreadSplit:
  // cores / ranks each), so under processor sharing it keeps compute_threads x (s - 1) threads busy.
  // Only from a profile taken with as many ranks in step as this simulation has: the threads it
  // stands for are those ranks'.
  const nlohmann::json::json_pointer key("/contention/compute_slowdown_with_collectives"),
      measured_ranks("/contention/ranks");
  if (profile && profile->provenance().contains(key) && profile->provenance()[key].is_number() &&
      profile->provenance().value(measured_ranks, 0) == static_cast<int>(scales.size()))
    cores.load_threads["collective"] =
        std::max(0.0, profile->provenance()[key].get<double>() - 1) * std::max(1, compute_threads);
  return sim::simulate_joint_ranks(plan, ranks, cores);
}

nlohmann::json joint_prediction(const traces::Plan& plan, const hw::Machine& base, const traces::OpProfile* profile,
                                std::vector<ResourceScales> scales, int compute_threads, double wait_cpu_share,
                                const nlohmann::json& ranks_measured) {
  const sim::JointRanks jr = simulate_ranks(plan, base, profile, scales, compute_threads, wait_cpu_share);
  nlohmann::json per_rank = nlohmann::json::array();
  for (size_t r = 0; r < jr.rank_s.size(); ++r)
    per_rank.push_back({{"rank", r}, {"predicted_s", jr.rank_s[r]}, {"collective_wait_s", jr.wait_s[r]},
                        {"compute_busy_s", jr.compute_s[r]}});
  nlohmann::json out = {{"predicted_s", jr.iteration_s}, {"host_cores", base.json.at("host").value("cores", 0)},
                        {"wait_cpu_share", wait_cpu_share}, {"ranks", per_rank}};
  // A diagnostic, not a prediction: the same simulation with each rank's compute set to its
  // measured compute busy time of the last step, against that step. It separates the error of the
  // ranks' speeds (the inputs) from that of how the ranks meet and share the cores (the model).
  if (ranks_measured.size() != scales.size()) return out;
  double last_step = 0;
  for (size_t r = 0; r < scales.size(); ++r) {
    const auto& m = ranks_measured[r];
    last_step = std::max(last_step, m.at("iteration_s").get<double>());
    const double busy = m.at("busy_s").value("compute", 0.0);
    if (busy <= 0 || jr.compute_s[r] <= 0) return out;
    scales[r].compute *= busy / jr.compute_s[r];
  }
  const double given = simulate_ranks(plan, base, profile, scales, compute_threads, wait_cpu_share).iteration_s;
  out["at_measured_compute"] = {
      {"predicted_s", given}, {"measured_last_step_s", last_step}, {"error", relative_error(given, last_step)}};
  return out;
}

// The joint simulation at the ranks' speeds of one step, memoised: steps at nearly the same speeds
// (scales within 0.5 %, as SpeedScaledPredictor) share a simulation.
class JointAtSpeeds {
 public:
  JointAtSpeeds(const traces::Plan& plan, const hw::Machine& base, const traces::OpProfile* profile,
                int compute_threads, double wait_cpu_share)
      : plan_(plan), base_(base), profile_(profile), threads_(compute_threads), wait_(wait_cpu_share) {}
  double iteration_s(const std::vector<ResourceScales>& ranks) {
    constexpr double kStep = 0.005;
    auto bin = [](double x) { return std::lround(std::log(x) / kStep); };
    auto unbin = [](long b) { return std::exp(static_cast<double>(b) * kStep); };
    std::vector<long> key;
    std::vector<ResourceScales> binned;
    for (const ResourceScales& r : ranks) {
      key.insert(key.end(), {bin(r.compute), bin(r.copy), bin(r.cpu)});
      binned.push_back({unbin(key[key.size() - 3]), unbin(key[key.size() - 2]), unbin(key.back())});
    }
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const double t = simulate_ranks(plan_, base_, profile_, binned, threads_, wait_).iteration_s;
    cache_[key] = t;
    return t;
  }

 private:
  const traces::Plan& plan_;
  const hw::Machine& base_;
  const traces::OpProfile* profile_;
  int threads_;
  double wait_;
  std::map<std::vector<long>, double> cache_;
};

// One plan of the interleaved launch: every measured step (not the warm-up) predicted by the joint
// simulation at both ranks' speeds then, and expressed at the reference speeds (raw x
// joint(reference) / joint(then), as the one-rank calibrate); the plan's measured time is the
// median of those, its prediction the joint simulation at the reference speeds.
nlohmann::json interleaved_prediction(JointAtSpeeds& joint, const std::vector<double>& raw_s,
                                      const std::vector<std::vector<ResourceScales>>& step_scales) {
  const size_t ranks = step_scales.at(0).size();
  const double reference = joint.iteration_s(std::vector<ResourceScales>(ranks));
  std::vector<double> at_ref, then_s, raw;
  nlohmann::json steps = nlohmann::json::array();
  for (size_t s = raw_s.size() > 1 ? 1 : 0; s < raw_s.size(); ++s) {
    const double then = joint.iteration_s(step_scales[s]);
    nlohmann::json scales = nlohmann::json::array();
    for (const ResourceScales& r : step_scales[s]) scales.push_back({r.compute, r.copy, r.cpu});
    at_ref.push_back(at_reference_speeds(raw_s[s], reference, then));
    then_s.push_back(then);
    raw.push_back(raw_s[s]);
    steps.push_back({{"raw_s", raw_s[s]}, {"predicted_then_s", then}, {"at_reference_s", at_ref.back()},
                     {"scales_compute_copy_cpu", scales}});
  }
  const double measured = quantile(at_ref, 0.5);
  return {{"predicted_s", reference},
          {"measured_s", measured},
          {"iteration_error", relative_error(reference, measured)},
          {"raw_median_s", quantile(raw, 0.5)},
          {"predicted_then_median_s", quantile(then_s, 0.5)},
          {"steps", steps}};
}

}  // namespace

RankPlanPrediction predict_rank_plan(const sim::offload::SearchResult& searched, const RankPredictors& p,
                                     const std::vector<BlockProbes>& rank_blocks) {
  RankPlanPrediction out;
  nlohmann::json& c = out.json;
  traces::Report& predicted = out.report;
  const traces::Plan& plan = searched.best_plan.plan;
  predicted = p.rank_cost ? sim::PlanSimulator(*p.rank_cost, p.contention).run(plan) : searched.best_report;
  // With every rank's blocks beside its steps: each rank at its own block medians, the slowest
  // rank's step (sim/calib/block_probes.h); the rank profile's blocks stay for the record.
  if (p.rank_profile && !summed_level(rank_blocks).empty()) {
    const double profile_blocks_s = predicted.iteration.seconds();
    RankBlocksPrediction at_blocks = predict_at_rank_blocks(plan, *p.rank_machine, *p.rank_profile, p.contention, rank_blocks);
    const double up =
        predict_at_rank_blocks(plan, *p.rank_machine, *p.rank_profile, p.contention, rank_blocks, kBlockStep).iteration_s;
    const double sensitivity = (up / at_blocks.iteration_s - 1) / (kBlockStep - 1);
    c["profile_blocks_predicted_s"] = profile_blocks_s;
    c["at_rank_blocks"] = {{"ranks_s", at_blocks.rank_s}, {"slowest_rank", at_blocks.slowest},
                           {"block_sensitivity", sensitivity}};
    predicted = std::move(at_blocks.report);
  }
  c["knobs"] = searched.best.knobs.to_json();
  c["predicted_s"] = predicted.iteration.seconds();
  c["searched_s"] = searched.best.iteration_s;  // with the calibration's one-rank profile
  return out;
}

nlohmann::json compare_rank_case(const sim::offload::SearchResult& searched, const traces::Report& predicted,
                                 const RankPredictors& p, const RankCaseRuns& m) {
  const traces::Plan& plan = searched.best_plan.plan;
  const nlohmann::json& j = m.runs;
  const traces::Report& mr = m.rank0;
  const double predicted_s = predicted.iteration.seconds();
  nlohmann::json c;
  const std::vector<double> it = j.at("iteration_s").get<std::vector<double>>();  // measured steps only
  const double measured = quantile(it, 0.5);
  nlohmann::json busy;
  for (const char* st : kRankStreams) {
    const auto* ps = predicted.stream(st);
    const auto* ms = mr.stream(st);
    if (!ps && !ms) continue;
    const double pb = ps ? ps->busy.seconds() : 0, mb = ms ? ms->busy.seconds() : 0;
    busy[st] = {{"predicted_s", pb}, {"measured_s", mb}, {"error", relative_error(pb, mb)}};
  }
  nlohmann::json memory;
  const std::map<std::string, std::string> measured_field = {
      {"gpu", "peak_device_bytes"}, {"pinned", "peak_pinned_bytes"}, {"pageable", "peak_pageable_bytes"}};
  // The device: the runtime's tensors replayed through the caching allocator's model in the
  // simulated schedule (sim/offload/analytic/runtime_memory.h); the plan's own bytes beside it.
  const sim::offload::RuntimeMemory rm = sim::offload::predict_runtime_memory(plan, predicted);
  for (const auto& [pool, field] : measured_field) {
    const auto* pp = predicted.pool(pool);
    const int64_t plan_b = pp ? pp->peak.n : 0, mb = j.at(field).get<int64_t>();
    const int64_t pb = pool == "gpu" ? rm.allocated_peak_bytes : plan_b;
    memory[pool] = {{"predicted_bytes", pb}, {"measured_bytes", mb},
                    {"error", relative_error(static_cast<double>(pb), static_cast<double>(mb))}};
    if (pool == "gpu")
      memory[pool].update({{"plan_bytes", plan_b},
                           {"plan_error", relative_error(static_cast<double>(plan_b), static_cast<double>(mb))},
                           {"predicted_reserved_bytes", rm.reserved_peak_bytes},
                           // the same tensors in rank 0's measured schedule: separates the
                           // schedule's error from the tensors'
                           {"predicted_in_measured_schedule_bytes",
                            sim::offload::predict_runtime_memory(plan, mr).allocated_peak_bytes}});
  }
  const int64_t analytic = searched.best.analytic_peak_gpu_bytes;
  memory["gpu"]["analytic_bytes"] = analytic;
  memory["gpu"]["analytic_error"] =
      relative_error(static_cast<double>(analytic), static_cast<double>(j.at("peak_device_bytes").get<int64_t>()));
  memory["gpu"]["measured_reserved_bytes"] = j.at("peak_device_reserved_bytes");
  // Each rank at its own speed (its probes beside the measured steps against the rank profile's
  // reference probes), simulated alone; the ranks meet at every collective, so the step is the
  // slowest rank's (sim/calib/speed_scaled_prediction.h).
  const traces::OpProfile* speed_profile = p.speed_profile();
  if (speed_profile && j.contains("rank_probes")) {
    const ProbeSpeeds reference = probe_references(speed_profile->provenance());
    SpeedScaledPredictor predictor(plan, p.speed_machine(), speed_profile,
                                   p.rank_profile ? p.contention : hw::contention_rules_from_profile(speed_profile->provenance()));
    nlohmann::json per_rank = nlohmann::json::array();
    std::vector<ResourceScales> rank_scales;
    double slowest = 0;
    for (const auto& steps : j["rank_probes"]) {
      std::vector<double> gemm, copy, adam;
      for (const auto& pr : steps) {  // the measured steps (merge_runs left out the warm-ups)
        gemm.push_back(0.5 * (pr["gemm_before_gflops"].get<double>() + pr["gemm_after_gflops"].get<double>()));
        copy.push_back(0.5 * (pr["copy_before_GBps"].get<double>() + pr["copy_after_GBps"].get<double>()));
        adam.push_back(0.5 * (pr["adam_before_mparams_per_s"].get<double>() + pr["adam_after_mparams_per_s"].get<double>()));
      }
      if (gemm.empty() || reference.gemm_gflops <= 0 || reference.copy_gbps <= 0 || reference.adam_mparams_per_s <= 0)
        break;
      const ProbeSpeeds then{quantile(gemm, 0.5), quantile(copy, 0.5), quantile(adam, 0.5)};
      const ResourceScales sc = scales_of(then, reference);
      rank_scales.push_back(sc);
      const double it_s = predictor.iteration_s(sc);
      slowest = std::max(slowest, it_s);
      per_rank.push_back({{"gemm_gflops", then.gemm_gflops}, {"copy_GBps", then.copy_gbps},
                          {"adam_mparams_per_s", then.adam_mparams_per_s}, {"compute_scale", sc.compute},
                          {"copy_scale", sc.copy}, {"cpu_scale", sc.cpu}, {"predicted_s", it_s}});
    }
    if (slowest > 0)
      c["at_rank_speeds"] = {{"ranks", per_rank}, {"predicted_s", slowest},
                             {"iteration_error", relative_error(slowest, measured)}};
    if (static_cast<int>(rank_scales.size()) == p.ranks) {
      c["joint"] = joint_prediction(plan, p.speed_machine(), speed_profile, rank_scales, j.value("compute_threads", 1),
                                    j.value("wait_cpu_share", 0.0), m.ranks_measured);
      c["joint"]["iteration_error"] = relative_error(c["joint"]["predicted_s"].get<double>(), measured);
    }
  }
  if (!m.step_scales.empty()) {
    JointAtSpeeds joint(plan, p.speed_machine(), speed_profile, j.value("compute_threads", 1),
                        j.value("wait_cpu_share", 0.0));
    c["interleaved"] = interleaved_prediction(joint, m.interleaved_s, m.step_scales);
    c["interleaved_launch_speeds"] = interleaved_prediction(joint, m.interleaved_s, m.launch_scales);
    c["interleaved_launch_speeds"].erase("steps");
  }
  c.update({{"measured_s", measured},
            {"measured_steps_s", it},
            {"iteration_error", relative_error(predicted_s, measured)},
            {"busy", busy},
            {"ranks_measured", m.ranks_measured},
            {"memory", memory}});
  return c;
}

nlohmann::json rank_section_metrics(const nlohmann::json& cases,
                                    const std::vector<std::vector<std::vector<double>>>& step_levels,
                                    const std::vector<BlockProbes>& rank_blocks, const traces::OpProfile* rank_profile,
                                    int interleave_steps, int bootstrap_resamples, uint64_t bootstrap_seed) {
  nlohmann::json s = nlohmann::json::object();
  const std::vector<double> block_level = summed_level(rank_blocks);
  std::vector<double> pred_s, meas_s, pred_gpu, meas_gpu, analytic_gpu, plan_gpu, speed_pred_s, speed_meas_s,
      joint_pred_s, joint_meas_s, given_pred_s, given_meas_s, sensitivities, profile_blocks_pred_s,
      profile_blocks_meas_s, inter_pred_s, inter_meas_s, launch_pred_s, launch_meas_s;
  Groups step_groups;  // each case's measured steps, for the intervals
  // A prediction of the case, c[key]["predicted_s"], beside the time c[key][measured_key] (the
  // case's measured time `measured` without a measured_key).
  auto add = [](const nlohmann::json& c, const char* key, const char* measured_key, double measured,
                std::vector<double>& pred, std::vector<double>& meas) {
    if (!c.contains(key)) return;
    pred.push_back(c[key]["predicted_s"].get<double>());
    meas.push_back(measured_key ? c[key][measured_key].get<double>() : measured);
  };
  for (const nlohmann::json& c : cases) {
    if (c.contains("error")) continue;
    const double measured = c.at("measured_s").get<double>();
    pred_s.push_back(c.at("predicted_s").get<double>());
    meas_s.push_back(measured);
    step_groups.push_back(c.at("measured_steps_s").get<std::vector<double>>());
    sensitivities.push_back(c.contains("at_rank_blocks") ? c["at_rank_blocks"]["block_sensitivity"].get<double>() : 0);
    if (c.contains("profile_blocks_predicted_s")) {
      profile_blocks_pred_s.push_back(c["profile_blocks_predicted_s"].get<double>());
      profile_blocks_meas_s.push_back(measured);
    }
    add(c, "at_rank_speeds", nullptr, measured, speed_pred_s, speed_meas_s);
    add(c, "joint", nullptr, measured, joint_pred_s, joint_meas_s);
    if (c.contains("joint"))
      add(c["joint"], "at_measured_compute", "measured_last_step_s", 0, given_pred_s, given_meas_s);
    add(c, "interleaved", "measured_s", 0, inter_pred_s, inter_meas_s);
    add(c, "interleaved_launch_speeds", "measured_s", 0, launch_pred_s, launch_meas_s);
    const nlohmann::json& g = c.at("memory").at("gpu");
    pred_gpu.push_back(static_cast<double>(g.at("predicted_bytes").get<int64_t>()));
    meas_gpu.push_back(static_cast<double>(g.at("measured_bytes").get<int64_t>()));
    analytic_gpu.push_back(static_cast<double>(g.at("analytic_bytes").get<int64_t>()));
    plan_gpu.push_back(static_cast<double>(g.at("plan_bytes").get<int64_t>()));
  }
  // Predicted iteration times against measured ones: {cases, MAPE, max error, Spearman}.
  auto metrics = [](const std::vector<double>& p, const std::vector<double>& m) {
    return nlohmann::json{{"cases", p.size()}, {"iteration_time_mape", mape(p, m)},
                          {"iteration_time_max_error", max_relative_error(p, m)},
                          {"spearman", p.size() > 1 ? spearman(p, m) : 0.0}};
  };
  if (!pred_s.empty()) {
    s["metrics"] = metrics(pred_s, meas_s);
    s["metrics"].update({{"peak_device_mape", mape(pred_gpu, meas_gpu)},
                         {"peak_device_max_error", max_relative_error(pred_gpu, meas_gpu)},
                         {"analytic_peak_device_mape", mape(analytic_gpu, meas_gpu)},
                         {"plan_peak_device_mape", mape(plan_gpu, meas_gpu)}});
    // The time criteria on 95 % intervals: whole sweeps resampled (every plan's step s of round r
    // and the blocks after them) when every plan ran every round with block probes, else steps
    // within each plan and the blocks' level as one more group (each plan moving by its sensitivity).
    s.update(judge_rank_criteria(pred_s, sensitivities, block_level, step_groups,
                                 s["metrics"]["peak_device_max_error"].get<double>(), bootstrap_resamples,
                                 bootstrap_seed, rank_sweep_levels(step_levels)));
  }
  if (!profile_blocks_pred_s.empty()) {
    s["metrics_profile_blocks"] = metrics(profile_blocks_pred_s, profile_blocks_meas_s);
    s["metrics_profile_blocks"]["what"] = "the same steps predicted with the rank profile's block entries "
                                          "(rank 0's) instead of each rank's blocks beside its steps";
  }
  if (!rank_blocks.empty()) {
    // Each rank's blocks beside its steps against the rank profile's entries.
    nlohmann::json blocks = nlohmann::json::array();
    for (size_t r = 0; r < rank_blocks.size(); ++r)
      for (const auto& [key, us] : rank_blocks[r].us) {
        nlohmann::json b = {{"rank", r}, {"signature", key}, {"beside_steps_us", spread_of(us).to_json()}};
        if (rank_profile)
          for (const traces::OpProfileEntry& e : rank_profile->entries())
            if (e.sig.key() == key) b["profile_us"] = e.us.mean;
        blocks.push_back(b);
      }
    s["block_probes"] = {
        {"samples", block_level.size()}, {"level_us", spread_of(block_level).to_json()}, {"blocks", blocks}};
  }
  if (!joint_pred_s.empty()) s["metrics_joint"] = metrics(joint_pred_s, joint_meas_s);
  auto with_steps = [&](nlohmann::json j) { j["steps"] = interleave_steps; return j; };
  if (!inter_pred_s.empty()) s["metrics_interleaved"] = with_steps(metrics(inter_pred_s, inter_meas_s));
  if (!launch_pred_s.empty()) s["metrics_interleaved_launch_speeds"] = with_steps(metrics(launch_pred_s, launch_meas_s));
  if (!given_pred_s.empty())
    s["metrics_joint_at_measured_compute"] = {
        {"cases", given_pred_s.size()},
        {"iteration_time_mape", mape(given_pred_s, given_meas_s)},
        {"iteration_time_max_error", max_relative_error(given_pred_s, given_meas_s)}};
  if (!speed_pred_s.empty()) s["metrics_at_rank_speeds"] = metrics(speed_pred_s, speed_meas_s);
  return s;
}

nlohmann::json judge_rank_criteria(const std::vector<double>& predicted, const std::vector<double>& sensitivity,
                                   const std::vector<double>& level_samples, const Groups& steps,
                                   double peak_device_max_error, int resamples, uint64_t seed,
                                   const std::vector<std::vector<double>>& sweep_levels) {
  const bool paired = !sweep_levels.empty();
  const MetricsWithIntervals ci =
      paired ? sweep_paired_metrics_with_intervals(predicted, sensitivity, sweep_levels, steps, resamples, seed)
             : iteration_metrics_with_intervals(predicted, sensitivity, level_samples, steps, resamples, seed);
  const Verdict v[] = {judge_at_most(ci.interval[kMape], 0.05), judge_at_most(ci.interval[kMaxError], 0.10),
                       judge_at_least(ci.interval[kSpearman], 0.9)};
  const bool peak_ok = peak_device_max_error <= 0.05;
  return {{"intervals", {{"iteration_time_mape", ci.interval[kMape].to_json()},
                         {"iteration_time_max_error", ci.interval[kMaxError].to_json()},
                         {"spearman", ci.interval[kSpearman].to_json()},
                         {"level", 0.95},
                         {"resamples", resamples},
                         {"block_level_samples", level_samples.size()},
                         {"resample", paired ? "sweeps (every plan's step of a round's step index and the blocks' "
                                               "level after them together)"
                                             : "steps within each plan (the blocks' level as one more group)"}}},
          {"verdicts", {{"iteration_time_mape", verdict_text(v[0])},
                        {"iteration_time_max_error", verdict_text(v[1])},
                        {"spearman", verdict_text(v[2])},
                        {"peak_device_max_error", peak_ok ? "met" : "NOT met"}}},
          {"criteria_met",
           peak_ok && std::all_of(std::begin(v), std::end(v), [](Verdict x) { return x == Verdict::kMet; })}};
}

bool rank_criteria_met(const nlohmann::json& section) { return section.value("criteria_met", false); }

bool rank_criteria_undecided(const nlohmann::json& section) {
  if (!section.contains("verdicts")) return false;
  const std::string undecided = verdict_text(Verdict::kUndecided);
  for (const char* k : {"iteration_time_mape", "iteration_time_max_error", "spearman"})
    if (section["verdicts"].value(k, "") == undecided) return true;
  return false;
}

}  // namespace protwin::calib
