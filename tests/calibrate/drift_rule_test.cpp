// When calibrate corrects a step for the machine's speed (sim/calib/drift_rule.h, issue 22). Oracles:
// the tests' nominal size (under no drift each fires in alpha = 5 % of seeded simulations: exact
// for log-normal probes, F and t distributions), closed forms for the corrections (no drift: every
// step at the steps' median and the reference equal to it, so the corrected step IS the raw one),
// and session 13's measured probe levels (experiments/twin-accuracy/README.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "sim/calib/calibration.h"
#include "sim/calib/drift_rule.h"
#include "sim/calib/sample_stats.h"
#include "sim/calib/speed_scaled_prediction.h"

namespace protwin::calib {
namespace {

// Probes of `steps` steps in `rounds` rounds: speed x exp(N(0, noise)), the speed of step s given.
struct Probes {
  std::vector<double> before, after, own;
  std::vector<int> round;
};
Probes probes(std::mt19937_64& rng, int steps, int rounds, double noise, double (*speed)(int step)) {
  std::normal_distribution<double> z(0, noise);
  Probes p;
  for (int s = 0; s < steps; ++s) {
    p.before.push_back(speed(s) * std::exp(z(rng)));
    p.after.push_back(speed(s) * std::exp(z(rng)));
    p.own.push_back((p.before.back() + p.after.back()) / 2);  // step_speeds with window 0
    p.round.push_back(s * rounds / steps);
  }
  return p;
}

double steady(int) { return 150; }

TEST_CASE("drift rule: with no drift each test fires at its nominal 5 % rate") {
  // 2000 seeded simulations per test; a 5 % rate gives 100 +- 9.7 (1 sd) detections: accept 3.5-6.5 %.
  constexpr int kSims = 2000;
  std::mt19937_64 rng(22);
  int between = 0, level = 0;
  for (int i = 0; i < kSims; ++i) {
    // A calibration's steps: 12 plans x 3 timed steps x 5 rounds, the GEMM probe's quiet noise
    // (a 14 % p10-p90 band is sd 5.5 % for a normal log).
    const Probes p = probes(rng, 180, 5, 0.055, steady);
    between += drift_between_steps(p.before, p.after).detected;
    // Cluster levels of the same stretch-to-stretch spread: 3 profiles against 5 rounds.
    std::normal_distribution<double> stretch(std::log(150.0), 0.03);
    std::vector<double> prof, rounds;
    for (int k = 0; k < 3; ++k) prof.push_back(std::exp(stretch(rng)));
    for (int r = 0; r < 5; ++r) rounds.push_back(std::exp(stretch(rng)));
    level += level_shift(prof, rounds).detected;
  }
  INFO("between steps fired " << between << ", level " << level << " of " << kSims);
  CHECK(between >= 0.035 * kSims);
  CHECK(between <= 0.065 * kSims);
  CHECK(level >= 0.035 * kSims);
  CHECK(level <= 0.065 * kSims);
}

TEST_CASE("drift rule: no drift detected means the corrected steps are the raw ones") {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 50; ++i) {
    const Probes p = probes(rng, 180, 5, 0.055, steady);
    const ProbeCorrection c = correct_probes({148, 151, 153}, p.before, p.after, p.own, p.round);
    if (c.between_steps.detected || c.level.detected) continue;  // the 5 % false alarms: next test
    ++checked;
    REQUIRE(c.then.size() == p.before.size());
    CHECK(c.reference == c.steps_median);
    for (double t : c.then) CHECK(t == c.reference);  // scale exactly 1: predicted(then) = predicted(reference)
    CHECK(at_reference_speed(0.25, c.then[0], c.reference) == 0.25);
    CHECK(c.to_json()["corrected"] == "none (raw times)");
  }
  CHECK(checked >= 40);  // 50 x (1 - 0.05)^2 = 45 expected
}

TEST_CASE("drift rule: drift between steps is corrected step by step") {
  // The runtime drift test's stretch: every other step 1.8x slower, the probe's quiet noise.
  std::mt19937_64 rng(3);
  const Probes p = probes(rng, 48, 1, 0.055, [](int s) { return s % 2 ? 150 / 1.8 : 150.0; });
  const ProbeCorrection c = correct_probes({}, p.before, p.after, p.own, p.round);
  CHECK(c.between_steps.detected);
  CHECK(c.between_steps.p_value < 1e-6);
  CHECK(c.then == p.own);                 // each step at its own probes' speed
  CHECK(!c.level.detected);               // no profile level: not testable
  CHECK(c.level.p_value == 1);
  CHECK(c.reference == c.steps_median);   // the steps' own level stands in
  CHECK(c.to_json()["corrected"] == "between steps");
}

TEST_CASE("drift rule: a level shift is corrected only beyond the stretches' own spread") {
  // A loaded machine during the profiles, a quiet one during the steps (session 11's run 2: the
  // profiles' probe at 83 GFLOPS, the steps' at 238): detected, the profiles' median is the reference.
  const DriftTest loaded = level_shift({80, 83, 86}, {236, 240, 238});
  CHECK(loaded.detected);
  CHECK(loaded.effect == Approx(std::log(83.0 / 238)).epsilon(0.02));
  std::mt19937_64 rng(5);
  const Probes p = probes(rng, 60, 3, 0.01, steady);
  const ProbeCorrection c = correct_probes({80, 83, 86}, p.before, p.after, p.own, p.round);
  CHECK(c.level.detected);
  CHECK(c.reference == 83);
  // Session 13's quiet runs: profile levels 153.9, 146.3, 143.1 GFLOPS (run 2's gpt2-tiny
  // profiles) against rounds 153.9, 153.0, 157.4, 149.3, 152.0 (run 1's gpt2-tiny): the 2-5 %
  // between them is what stretches of this machine differ by anyway, so it is not corrected.
  const DriftTest quiet = level_shift({153.9, 146.3, 143.1}, {153.9, 153.0, 157.4, 149.3, 152.0});
  CHECK(!quiet.detected);
  CHECK(quiet.p_value > 0.05);
  // The same closed form by hand: t = |mean log difference| / (s_pooled sqrt(1/3 + 1/5)).
  const std::vector<double> x = {std::log(153.9), std::log(146.3), std::log(143.1)},
                            y = {std::log(153.9), std::log(153.0), std::log(157.4), std::log(149.3), std::log(152.0)};
  double mx = 0, my = 0, ss = 0;
  for (double v : x) mx += v / 3;
  for (double v : y) my += v / 5;
  for (double v : x) ss += (v - mx) * (v - mx);
  for (double v : y) ss += (v - my) * (v - my);
  CHECK(quiet.statistic == Approx(std::abs(mx - my) / std::sqrt(ss / 6 * (1.0 / 3 + 1.0 / 5))));
  CHECK(quiet.df2 == 6);
}

TEST_CASE("drift rule: too few samples are not testable, never a correction") {
  CHECK(!drift_between_steps({100, 110}, {105, 95}).detected);
  CHECK(drift_between_steps({100, 110}, {105, 95}).p_value == 1);
  CHECK(!level_shift({100}, {50}).detected);        // one stretch each: no spread to compare with
  CHECK(!level_shift({}, {50, 60, 70}).detected);   // a profile without the probe
  CHECK(!level_shift({100, 100}, {50, 50}).detected);  // no spread at all: not testable
  const ProbeCorrection c = correct_probes({100}, {90}, {92}, {91}, {0});
  CHECK(c.reference == c.steps_median);
  CHECK(c.then == std::vector<double>{c.steps_median});
}

}  // namespace
}  // namespace protwin::calib
