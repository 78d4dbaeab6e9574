// EfficiencyCurve: a measured rate as a function of problem size (GEMM TFLOPS vs GFLOP per call,
// HBM GB/s vs bytes moved, PCIe fraction vs copy size), interpolated piecewise-linearly in
// log10(x). Points are data, never fitted formulas (hardware.md §5).
#pragma once

#include <string>
#include <vector>

#include "traces/json_reader.h"

namespace protwin::hw {

class EfficiencyCurve {
 public:
  EfficiencyCurve() = default;
  // x strictly increasing and > 0, y > 0, same length >= 1 (checked by from_json).
  EfficiencyCurve(std::vector<double> x, std::vector<double> y);

  // Reads {"<x_key>": [...], "<y_key>": [...]}; errors name the file and JSON pointer.
  static EfficiencyCurve from_json(const traces::JsonNode& node, const std::string& x_key,
                                   const std::string& y_key);

  bool empty() const { return x_.empty(); }
  // y at x, linear in log10(x); clamped to the first / last point outside the measured range.
  double at(double x) const;
  double first_x() const { return x_.front(); }
  double first_y() const { return y_.front(); }
  double last_x() const { return x_.back(); }
  const std::vector<double>& xs() const { return x_; }
  const std::vector<double>& ys() const { return y_; }

 private:
  std::vector<double> x_, y_;
};

}  // namespace protwin::hw
