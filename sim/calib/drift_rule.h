// When calibrate corrects a step for the machine's speed, and when the raw time is better (issue 22).
//
// A reference probe (runtime/profile/stability_probe.h) timed beside every profiled op and every
// measured step carries two kinds of change: real drift of the machine, and the probe's own noise.
// Correcting a step by a probe difference that is mostly noise adds that noise to the step, and a
// level difference between the profile and the steps shifts EVERY plan by it. On a quiet machine
// the GEMM probe's level moves by 2-5 % from one ~20 s stretch to the next (the rounds of a run:
// 149-157 GFLOPS in session 13's run 1), so the profiles' reference (3 stretches) and the steps'
// level (3-5 stretches) differ by a few percent from that alone: normalising then made every plan
// look 3-5 % faster while the raw steps matched the prediction. Hence two tests per probe, each at
// significance kDriftAlpha, and a correction only for the change that is detected:
//   * drift between steps: do the probes around different steps differ more than the two probes
//     around the same step? (one-way ANOVA on log speed, each step's before/after pair a group)
//   * a level shift between profile and steps: do the profiles' reference levels differ from the
//     rounds' step levels more than such stretches differ among themselves? (two-sample t-test on
//     the log of each profile's and each round's median; the stretch is the unit, because probes
//     within one stretch share its speed and are not independent samples of it)
// Neither detected: every step at the steps' own median speed and the reference equal to it, so
// the corrected step is exactly the raw one. Torch-free.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::calib {

// The tests' significance: the chance of correcting for drift that is only the probe's noise.
constexpr double kDriftAlpha = 0.05;

struct DriftTest {
  double statistic = 0;      // F (between steps) or |t| (level shift)
  double df1 = 0, df2 = 0;   // degrees of freedom (df1 only for F)
  double p_value = 1;        // 1 when not testable (too few samples)
  double effect = 0;         // level: log(profile level / steps' level); between steps: sd of log pair means
  bool detected = false;     // p_value < alpha
  nlohmann::json to_json() const;
};

// Drift between steps from the probes just before and just after each step (speeds > 0, equal
// lengths). Under no drift both probes of a step and the probes of other steps are draws of the
// same noise, so F = var(log pair means) / (var(log before - log after) / 4) ~ F(n - 1, n - 1)
// (sample variances; the differences' own mean is removed, so a steady before/after offset does
// not count as noise). Not testable (p = 1) below 3 steps.
DriftTest drift_between_steps(const std::vector<double>& before, const std::vector<double>& after,
                              double alpha = kDriftAlpha);

// Level shift between the profiles (each profile's median reference probe) and the steps (each
// round's median step probe): pooled two-sample t-test on the logs, K + R - 2 degrees of freedom.
// Not testable (p = 1) with fewer than 3 levels in all or no spread to estimate.
DriftTest level_shift(const std::vector<double>& profile_levels, const std::vector<double>& round_levels,
                      double alpha = kDriftAlpha);

// One probe's correction of the steps. Inputs per measured step (all plans and rounds, any order):
// the probes before and after it, its own speed (step_speeds) and its round; the profiles' levels
// (empty: the profile recorded none).
struct ProbeCorrection {
  DriftTest between_steps, level;
  double steps_median = 0;   // median of every step probe (before and after)
  double reference = 0;      // the speed steps are expressed at: the profiles' median when a level
                             // shift is detected, else the steps' median
  std::vector<double> then;  // each step's speed: its own when drift between steps is detected,
                             // else the steps' median
  nlohmann::json to_json() const;
};
ProbeCorrection correct_probes(const std::vector<double>& profile_levels, const std::vector<double>& before,
                               const std::vector<double>& after, const std::vector<double>& own_speed,
                               const std::vector<int>& round, double alpha = kDriftAlpha);

}  // namespace protwin::calib
