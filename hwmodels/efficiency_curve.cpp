#include "hwmodels/efficiency_curve.h"

#include <algorithm>
#include <cmath>

#include "traces/error.h"

namespace protwin::hw {

EfficiencyCurve::EfficiencyCurve(std::vector<double> x, std::vector<double> y)
    : x_(std::move(x)), y_(std::move(y)) {
  PROTWIN_ASSERT(x_.size() == y_.size() && !x_.empty(), "curve needs equal, non-empty x and y");
}

EfficiencyCurve EfficiencyCurve::from_json(const traces::JsonNode& node, const std::string& x_key,
                                           const std::string& y_key) {
  node.check_keys({x_key, y_key});
  const traces::JsonNode xs = node.at(x_key), ys = node.at(y_key);
  if (xs.size() == 0) xs.fail("expected at least one point");
  if (ys.size() != xs.size())
    ys.fail("expected " + std::to_string(xs.size()) + " values (one per " + x_key + " point), got " +
            std::to_string(ys.size()));
  std::vector<double> x, y;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double xi = xs.at(i).as_number(), yi = ys.at(i).as_number();
    if (!(xi > 0)) xs.at(i).fail("expected a number > 0");
    if (!(yi > 0)) ys.at(i).fail("expected a number > 0");
    if (i > 0 && !(xi > x.back())) xs.at(i).fail("expected points in strictly increasing order");
    x.push_back(xi);
    y.push_back(yi);
  }
  return EfficiencyCurve(std::move(x), std::move(y));
}

double EfficiencyCurve::at(double x) const {
  PROTWIN_ASSERT(!x_.empty(), "empty curve");
  if (!(x > x_.front())) return y_.front();
  if (x >= x_.back()) return y_.back();
  const size_t hi = static_cast<size_t>(std::upper_bound(x_.begin(), x_.end(), x) - x_.begin());
  const size_t lo = hi - 1;
  const double t = (std::log10(x) - std::log10(x_[lo])) / (std::log10(x_[hi]) - std::log10(x_[lo]));
  return y_[lo] + t * (y_[hi] - y_[lo]);
}

}  // namespace protwin::hw
