// Oracles: closed forms of MAPE, max relative error and Spearman's rho (1 - 6 sum d^2 / (n(n^2-1))
// without ties; mean ranks with ties).
#include <catch2/catch.hpp>

#include "sim/calib/calibration.h"
#include "sim/calib/sample_stats.h"

using namespace protwin::calib;

TEST_CASE("MAPE and max error are the closed forms") {
  CHECK(mape({110, 90}, {100, 100}) == Approx(0.10));
  CHECK(mape({1.5, 2.0, 3.0}, {1.0, 2.0, 4.0}) == Approx((0.5 + 0.0 + 0.25) / 3));
  CHECK(max_relative_error({105, 80}, {100, 100}) == Approx(0.20));
  CHECK(mape({3, 4}, {3, 4}) == 0.0);
}

TEST_CASE("ranks give ties their mean rank") {
  CHECK(ranks({10, 30, 20}) == std::vector<double>{1, 3, 2});
  CHECK(ranks({1, 2, 2, 3}) == std::vector<double>{1, 2.5, 2.5, 4});
  CHECK(ranks({5, 5, 5}) == std::vector<double>{2, 2, 2});
}

TEST_CASE("Spearman matches 1 - 6 sum d^2 / (n (n^2 - 1)) without ties") {
  // d = {1, 1, 1, 1, 0}: 1 - 6*4 / (5*24) = 0.8
  CHECK(spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}) == Approx(0.8));
  CHECK(spearman({1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}) == Approx(1.0));
  CHECK(spearman({1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}) == Approx(-1.0));
  // Monotone but not linear: ranks only.
  CHECK(spearman({0.1, 0.2, 0.3, 0.4}, {1, 10, 100, 1000}) == Approx(1.0));
}

TEST_CASE("Spearman with ties is the Pearson correlation of mean ranks") {
  // ranks a = {1, 2.5, 2.5, 4}, b = {1, 2, 3, 4}: cov = 4.5 / 4... rho = 4.5 / sqrt(4.5 * 5)
  CHECK(spearman({1, 2, 2, 3}, {1, 2, 3, 4}) == Approx(4.5 / std::sqrt(4.5 * 5.0)));
  CHECK(spearman({1, 1, 1}, {1, 2, 3}) == 0.0);  // a constant side has no rank order
}

TEST_CASE("quantiles interpolate linearly between order statistics (numpy's default)") {
  // numpy.quantile([1, 2, 3, 4, 10], q): q=0.1 -> 1.4, 0.5 -> 3, 0.9 -> 7.6
  const std::vector<double> x = {10, 3, 1, 4, 2};
  CHECK(quantile(x, 0.1) == Approx(1.4));
  CHECK(quantile(x, 0.5) == Approx(3.0));
  CHECK(quantile(x, 0.9) == Approx(7.6));
  CHECK(quantile(x, 0.0) == 1.0);
  CHECK(quantile(x, 1.0) == 10.0);
  const Spread s = spread_of(x);
  CHECK(s.n == 5);
  CHECK(s.min == 1.0);
  CHECK(s.max == 10.0);
  CHECK(s.relative == Approx((7.6 - 1.4) / 3.0));
  CHECK(spread_of({}).n == 0);
  CHECK(spread_of({7}).relative == 0.0);
}

TEST_CASE("the median's distribution-free interval is the order statistics of the binomial table") {
  // Closed forms (binomial tails, X ~ Bin(n, 1/2)): n = 12, P(X <= 2) = 79/4096 = 1.9 % and
  // P(X <= 3) = 299/4096 = 7.3 %, so ranks 3 and 10 (96.1 %); n = 6, P(X = 0) = 1.6 %, ranks 1 and 6;
  // n = 5, P(X = 0) = 3.1 % > 2.5 %: no rank is that sure, the whole range.
  std::vector<double> twelve;
  for (int i = 12; i >= 1; --i) twelve.push_back(i);
  CHECK(median_interval(twelve) == std::pair<double, double>{3, 10});
  CHECK(median_interval({6, 5, 4, 3, 2, 1}) == std::pair<double, double>{1, 6});
  CHECK(median_interval({5, 4, 3, 2, 1}) == std::pair<double, double>{1, 5});
  std::vector<double> twenty;  // n = 20: P(X <= 5) = 2.07 %, P(X <= 6) = 5.77 %: ranks 6 and 15
  for (int i = 1; i <= 20; ++i) twenty.push_back(i);
  CHECK(median_interval(twenty) == std::pair<double, double>{6, 15});
  CHECK_THROWS_WITH(median_interval({}), Catch::Contains("no samples"));
}
