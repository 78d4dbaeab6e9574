#include "sim/calib/calibration.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "sim/calib/sample_stats.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"
#include "traces/error.h"

namespace protwin::calib {

namespace {
void check_pair(const std::vector<double>& p, const std::vector<double>& m) {
  PROTWIN_ASSERT(!p.empty() && p.size() == m.size(), "calibration statistics need equal, non-empty vectors");
  for (double x : m) PROTWIN_ASSERT(x > 0, "measured values must be > 0");
}
}  // namespace

double mape(const std::vector<double>& p, const std::vector<double>& m) {
  check_pair(p, m);
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) s += std::abs(p[i] - m[i]) / m[i];
  return s / static_cast<double>(p.size());
}

double max_relative_error(const std::vector<double>& p, const std::vector<double>& m) {
  check_pair(p, m);
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) s = std::max(s, std::abs(p[i] - m[i]) / m[i]);
  return s;
}

std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = mean_rank;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  PROTWIN_ASSERT(!a.empty() && a.size() == b.size(), "spearman needs equal, non-empty vectors");
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

double at_reference_speed(double raw_s, double speed, double reference) {
  PROTWIN_ASSERT(raw_s > 0 && speed > 0 && reference > 0, "at_reference_speed needs positive times and speeds");
  return raw_s * speed / reference;
}

std::vector<std::vector<double>> step_speeds(const std::vector<std::vector<double>>& before,
                                             const std::vector<std::vector<double>>& after, size_t half_window) {
  PROTWIN_ASSERT(!before.empty() && before.size() == after.size(), "step_speeds needs probes of every plan");
  const size_t plans = before.size(), steps = before[0].size();
  // The steps in time order, with both probes of each.
  std::vector<std::pair<size_t, size_t>> order;  // (plan, step)
  std::vector<std::vector<double>> probes;        // per step in time order: its two probes
  for (size_t s = 0; s < steps; ++s)
    for (size_t n = 0; n < plans; ++n) {
      const size_t i = s % 2 == 0 ? n : plans - 1 - n;
      PROTWIN_ASSERT(before[i].size() == steps && after[i].size() == steps, "step_speeds: plans of unequal steps");
      order.push_back({i, s});
      probes.push_back({before[i][s], after[i][s]});
    }
  std::vector<std::vector<double>> out(plans, std::vector<double>(steps));
  for (size_t k = 0; k < order.size(); ++k) {
    std::vector<double> window;
    for (size_t j = k > half_window ? k - half_window : 0; j <= std::min(order.size() - 1, k + half_window); ++j)
      window.insert(window.end(), probes[j].begin(), probes[j].end());
    out[order[k].first][order[k].second] = quantile(window, 0.5);
  }
  return out;
}

std::vector<double> iteration_metrics(const std::vector<double>& p, const std::vector<double>& m) {
  std::vector<double> out(kIterationMetrics);
  out[kMape] = mape(p, m);
  out[kMaxError] = max_relative_error(p, m);
  out[kSpearman] = spearman(p, m);
  const size_t bp = static_cast<size_t>(std::min_element(p.begin(), p.end()) - p.begin());
  const size_t bm = static_cast<size_t>(std::min_element(m.begin(), m.end()) - m.begin());
  out[kBestGap] = m[bp] / m[bm] - 1;
  return out;
}

namespace {
// The metrics of plan i predicted at the blocks' level f (over its point value: predicted[i] x
// (1 + sensitivity[i] (f - 1)), predicted[i] itself at f = 1) against the plans' median steps.
std::vector<double> metrics_at_level(const std::vector<double>& predicted, const std::vector<double>& sensitivity,
                                     double f, const std::vector<double>& medians) {
  std::vector<double> pred(predicted);
  if (f != 1)
    for (size_t i = 0; i < pred.size(); ++i) pred[i] = predicted[i] * (1 + sensitivity[i] * (f - 1));
  return iteration_metrics(pred, medians);
}
}  // namespace

MetricsWithIntervals iteration_metrics_with_intervals(const std::vector<double>& predicted,
                                                      const std::vector<double>& sensitivity,
                                                      const std::vector<double>& level_samples, const Groups& steps,
                                                      int resamples, uint64_t seed, double level) {
  const bool blocks = !level_samples.empty();
  PROTWIN_CHECK(!blocks || sensitivity.size() == predicted.size(), "calibrate: ", sensitivity.size(),
                " sensitivities for ", predicted.size(), " predictions");
  const double point_level = blocks ? quantile(level_samples, 0.5) : 1.0;
  PROTWIN_CHECK(point_level > 0, "calibrate: the blocks' level must be > 0, got ", point_level);
  Groups groups = steps;
  if (blocks) groups.push_back(level_samples);  // the last group: the blocks' level, one sample per step
  auto statistic = [&](const Groups& g) {
    std::vector<double> medians;
    for (size_t i = 0; i < steps.size(); ++i) medians.push_back(quantile(g[i], 0.5));
    return metrics_at_level(predicted, sensitivity, blocks ? quantile(g.back(), 0.5) / point_level : 1.0, medians);
  };
  return {statistic(groups), bootstrap_intervals(groups, statistic, resamples, seed, level)};
}

MetricsWithIntervals sweep_paired_metrics_with_intervals(const std::vector<double>& predicted,
                                                         const std::vector<double>& sensitivity,
                                                         const std::vector<std::vector<double>>& sweep_levels,
                                                         const Groups& steps, int resamples, uint64_t seed,
                                                         double level) {
  PROTWIN_CHECK(!steps.empty() && !steps[0].empty(), "calibrate: no measured steps to pair");
  PROTWIN_CHECK(sensitivity.size() == predicted.size() && steps.size() == predicted.size(), "calibrate: ",
                predicted.size(), " predictions, ", sensitivity.size(), " sensitivities, ", steps.size(), " plans");
  const size_t sweeps = steps[0].size();
  for (const auto& s : steps)
    PROTWIN_CHECK(s.size() == sweeps, "calibrate: plans with ", sweeps, " and ", s.size(), " steps cannot be paired by sweep");
  PROTWIN_CHECK(sweep_levels.empty() || sweep_levels.size() == sweeps, "calibrate: ", sweep_levels.size(),
                " sweeps of block probes for ", sweeps, " sweeps of steps");
  auto level_at = [&](const std::vector<size_t>& ks) {
    std::vector<double> v;
    for (size_t k : ks) v.insert(v.end(), sweep_levels[k].begin(), sweep_levels[k].end());
    return quantile(v, 0.5);
  };
  std::vector<size_t> all(sweeps);
  std::iota(all.begin(), all.end(), size_t{0});
  const double point_level = sweep_levels.empty() ? 1.0 : level_at(all);
  PROTWIN_CHECK(point_level > 0, "calibrate: the blocks' level must be > 0, got ", point_level);
  std::vector<double> medians(predicted.size()), draw;
  auto statistic = [&](const std::vector<size_t>& ks) {
    for (size_t i = 0; i < steps.size(); ++i) {
      draw.clear();
      for (size_t k : ks) draw.push_back(steps[i][k]);
      medians[i] = quantile(draw, 0.5);
    }
    return metrics_at_level(predicted, sensitivity, sweep_levels.empty() ? 1.0 : level_at(ks) / point_level, medians);
  };
  return {statistic(all), bootstrap_slot_intervals(sweeps, statistic, resamples, seed, level)};
}

Verdict judge_at_most(const Interval& i, double target) {
  return i.hi <= target ? Verdict::kMet : i.lo > target ? Verdict::kNotMet : Verdict::kUndecided;
}

Verdict judge_at_least(const Interval& i, double target) {
  return i.lo >= target ? Verdict::kMet : i.hi < target ? Verdict::kNotMet : Verdict::kUndecided;
}

const char* verdict_text(Verdict v) {
  return v == Verdict::kMet ? "met" : v == Verdict::kNotMet ? "NOT met" : "undecided";
}

bool another_round_fits(double elapsed_s, double last_measure_s, double budget_s) {
  return elapsed_s + last_measure_s <= budget_s;
}

std::vector<size_t> round_plan_order(size_t plans, int round) {
  PROTWIN_CHECK(round >= 0, "calibrate: round ", round, " is negative");
  const double golden = (std::sqrt(5.0) - 1) / 2;  // 0.618...: consecutive starts far apart
  const double x = round * golden;
  const size_t start = plans == 0 ? 0 : std::min(plans - 1, static_cast<size_t>((x - std::floor(x)) * plans));
  std::vector<size_t> order(plans);
  for (size_t k = 0; k < plans; ++k) order[k] = (start + k) % plans;
  return order;
}

CaseSelection select_cases(const sim::Workload& w, const hw::HardwareCostModel& cost, int count, int threads) {
  CaseSelection out;
  std::vector<CalibrationCase> pool;
  auto search = [&](const std::string& system) {
    sim::offload::SearchOptions o;
    o.system = system;
    o.gpus = 1;
    o.batch = w.options.batch;
    o.seq = w.options.seq;
    o.dtype = w.options.dtype;
    o.flash_attention = w.options.flash_attention;
    o.threads = threads;
    return sim::offload::search_policy(w.model, cost, o);
  };
  const sim::offload::SearchResult pt = search("protrain");
  if (pt.found) {
    pool.push_back({"search best", pt.best.knobs, "protrain"});
    for (size_t i = 0; i < pt.pareto.size(); ++i)
      pool.push_back({"pareto " + std::to_string(i + 1), pt.pareto[i].knobs, "protrain"});
  } else {
    out.skipped.push_back("search best: protrain found no plan that fits");
  }
  for (const char* sys : {"deepspeed", "zero-offload", "colossalai", "fsdp", "ddp"}) {
    const sim::offload::SearchResult r = search(sys);
    if (r.found) pool.push_back({std::string(sys) + " best", r.best.knobs, sys});
    else out.skipped.push_back(std::string(sys) + " best: does not fit");
  }
  // Hand-picked variations around ProTrain's pick (or its defaults): each moves one knob.
  using sim::offload::OffloadKnobs;
  const OffloadKnobs base = pt.found ? pt.best.knobs : sim::offload::base_knobs("protrain");
  const int layers = static_cast<int>(w.model.layers);
  auto hand = [&](const std::string& what, const std::function<void(OffloadKnobs&)>& edit) {
    OffloadKnobs k = base;
    edit(k);
    pool.push_back({"hand: " + what, k, "protrain"});
  };
  hand("n_persist=0 n_buffer=2", [](OffloadKnobs& k) { k.n_persist = 0; k.n_buffer = 2; });
  hand("n_persist=0 n_buffer=3", [](OffloadKnobs& k) { k.n_persist = 0; k.n_buffer = 3; });
  hand("all swap", [&](OffloadKnobs& k) { k.n_swap = layers; k.n_checkpoint = 0; });
  hand("all checkpoint", [&](OffloadKnobs& k) { k.n_swap = 0; k.n_checkpoint = layers; });
  hand("half swap half checkpoint", [&](OffloadKnobs& k) { k.n_swap = layers / 2; k.n_checkpoint = layers - layers / 2; });
  hand("no prefetch", [](OffloadKnobs& k) { k.prefetch = false; });
  hand("adam after backward", [](OffloadKnobs& k) { k.cpu_adam_overlap = false; });
  hand("no buffer reuse", [](OffloadKnobs& k) { k.buffer_reuse = false; });
  hand("torch cpu adam", [](OffloadKnobs& k) { k.cpu_adam_impl = "torch"; });
  hand("per-block chunks", [](OffloadKnobs& k) { k.per_block_chunks = true; k.chunk_bytes = 0; });
  hand("n_persist=1 n_buffer=2 ckpt 2",
       [](OffloadKnobs& k) { k.n_persist = 1; k.n_buffer = 2; k.n_checkpoint = 2; k.n_swap = 0; });

  std::vector<std::string> seen;
  for (const auto& c : pool) {
    if (static_cast<int>(out.cases.size()) >= count) break;
    const std::string key = c.knobs.to_json().dump();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      out.skipped.push_back(c.label + ": same knobs as an earlier case");
      continue;
    }
    const sim::offload::Candidate e = sim::offload::evaluate(w, cost, 1, c.knobs);
    if (!e.simulated) {
      out.skipped.push_back(c.label + ": " + e.failure.substr(0, e.failure.find('\n')));
      continue;
    }
    seen.push_back(key);
    out.cases.push_back(c);
  }
  return out;
}

}  // namespace protwin::calib
