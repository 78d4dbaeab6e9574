// calibrate's comparison of a case's two sides (sim/calib/case_comparison.h). Oracles: closed
// forms on hand-made cases (a fit recovers known per-stream scales exactly, metrics by hand);
// simulate_case against the search's own evaluation of the same knobs is in cases_test.cpp.
#include <catch2/catch.hpp>

#include "sim/calib/case_comparison.h"

using namespace protwin;

namespace {
calib::CaseOutcome outcome(double predicted, double measured, std::map<std::string, double> pred_busy = {},
                           std::map<std::string, double> meas_busy = {}) {
  calib::CaseOutcome c;
  c.predicted_s = predicted;
  c.measured_s = measured;
  c.pred_busy = std::move(pred_busy);
  c.meas_busy = std::move(meas_busy);
  c.pred_peak = {{"gpu", 100}, {"gpu_plan", 80}, {"pinned", 10}};
  c.meas_peak = {{"gpu", 100}, {"pinned", 10}};
  return c;
}
}  // namespace

TEST_CASE("the fit recovers known per-stream scales exactly") {
  // Measured busy = scale x predicted for every case: the summed ratio is the scale itself; a stream
  // that no case busies (d2h) keeps 1.
  const std::map<std::string, double> scale = {{"compute", 1.25}, {"h2d", 0.5}, {"cpu_optim", 2.0}};
  std::vector<calib::CaseOutcome> cases;
  for (double k : {1.0, 2.0, 3.0}) {
    std::map<std::string, double> p, m;
    for (const auto& [st, s] : scale) {
      p[st] = 0.125 * k;
      m[st] = s * 0.125 * k;
    }
    cases.push_back(outcome(1, 1, p, m));
  }
  const std::vector<const calib::CaseOutcome*> train = {&cases[0], &cases[1], &cases[2]};
  const std::map<std::string, double> fitted = calib::fit_stream_scales(train);
  CHECK(fitted.at("compute") == 1.25);
  CHECK(fitted.at("h2d") == 0.5);
  CHECK(fitted.at("cpu_optim") == 2.0);
  CHECK(fitted.at("d2h") == 1.0);
}

TEST_CASE("case metrics by hand: errors, ranking, the chosen prediction and the memory peaks") {
  // Predicted 1.1, 2, 2.7 against measured 1, 2, 3: errors +10 %, 0, -10 %.
  std::vector<calib::CaseOutcome> cases = {outcome(1.1, 1), outcome(2, 2), outcome(2.7, 3)};
  cases[2].pred_peak["gpu"] = 90;  // one device peak 10 % low
  cases[0].kernels_predicted_s = 2;  // kernels alone: the fastest plan predicted slowest
  cases[1].kernels_predicted_s = 2;
  cases[2].kernels_predicted_s = 3;
  const std::vector<const calib::CaseOutcome*> cs = {&cases[0], &cases[1], &cases[2]};
  const calib::CaseMetrics m = calib::case_metrics(cs);
  CHECK(m.n == 3);
  CHECK(m.mape == Approx(0.2 / 3));
  CHECK(m.max_error == Approx(0.1));
  CHECK(m.mean_error == Approx(0).margin(1e-12));
  CHECK(m.spearman == Approx(1));
  CHECK(m.best_is_best);
  CHECK(m.best_gap == 0);
  CHECK(m.peak_mape == Approx(0.1 / 3));
  CHECK(m.host_peak_mape == 0);
  const calib::CaseMetrics k = calib::case_metrics(cs, &calib::CaseOutcome::kernels_predicted_s);
  CHECK(k.mape == Approx((1.0 + 0 + 0) / 3));
  CHECK(k.mean_error == Approx(1.0 / 3));
  CHECK(k.to_json().at("cases") == 3);
  // The plan's own bytes (80) against the allocator's (100): 20 % each.
  CHECK(calib::plan_bytes_mape(cs) == Approx(0.2));
  CHECK(calib::relative_error(1.1, 0) == 0);
}

TEST_CASE("diagnosis names the streams and pools off by more than the tolerance, worst first") {
  calib::CaseOutcome c = outcome(1, 1, {{"compute", 0.6}, {"h2d", 0.1}, {"d2h", 0.01}},
                                 {{"compute", 0.5}, {"h2d", 0.2}, {"d2h", 0.005}});
  c.pred_peak["pinned"] = 13;
  // compute +20 %, h2d -50 %, d2h +100 % but only 5 ms (under 2 % of the 1 s step), pinned +30 %.
  CHECK(calib::diagnosis(c, 0.10) == "h2d -50%, pool pinned +30%, compute +20%");
  CHECK(calib::diagnosis(c, 0.60) == "-");
}
