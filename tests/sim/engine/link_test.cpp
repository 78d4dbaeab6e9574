// Oracles: closed forms of max-min fair sharing (1 GB/s = 1 byte/ns), computed by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "sim/engine/link.h"

using namespace protwin;
using namespace protwin::sim;

namespace {
struct Spec {
  int64_t at;
  std::vector<int> route;
  double bytes;
  double cap;
};

// Starts each transfer at its time and records when each one finishes.
struct Driver : Handler {
  Engine engine;
  LinkNetwork net;
  std::vector<Spec> specs;
  std::vector<int64_t> done;
  explicit Driver(std::vector<LinkCapacity> links, std::vector<Spec> s)
      : net(engine, std::move(links)), specs(std::move(s)), done(specs.size(), -1) {
    for (size_t i = 0; i < specs.size(); ++i) engine.schedule(SimTime(specs[i].at), 1, this, i);
  }
  void on_event(uint64_t p) override {
    if (p >> 32) {
      done[p & 0xffffffffu] = engine.now().ns;
      return;
    }
    const Spec& s = specs[p];
    net.start(s.route.data(), static_cast<int>(s.route.size()), s.bytes, s.cap, this,
              (uint64_t{1} << 32) | p);
  }
};
}  // namespace

TEST_CASE("one transfer alone runs at the link rate, rounded up to whole ns", "[engine][link]") {
  Driver d({{"pcie", 3}}, {{0, {0}, 1000, 0}});
  d.engine.run();
  CHECK(d.done[0] == 334);  // ceil(1000 / 3)
}

TEST_CASE("a tiny transfer never takes zero time", "[engine][link]") {
  Driver d({{"pcie", 1000}}, {{7, {0}, 1, 0}});
  d.engine.run();
  CHECK(d.done[0] == 8);
}

TEST_CASE("two concurrent transfers on one link each get half", "[engine][link]") {
  Driver d({{"pcie", 10}}, {{0, {0}, 1000, 0}, {0, {0}, 1000, 0}});
  d.engine.run();
  CHECK(d.done == std::vector<int64_t>{200, 200});  // 2 * bytes / bw
}

TEST_CASE("a transfer joining later slows the first, stale completions are ignored",
          "[engine][link]") {
  // A alone at 10 B/ns for 50 ns (500 B left), then both at 5: A ends at 150; B has 500 B left
  // and finishes alone at 10: 200 = (1000 + 1000) / 10.
  Driver d({{"pcie", 10}}, {{0, {0}, 1000, 0}, {50, {0}, 1000, 0}});
  d.engine.run();
  CHECK(d.done == std::vector<int64_t>{150, 200});
}

TEST_CASE("a transfer over two links gets the slower link's rate", "[engine][link]") {
  Driver d({{"pcie", 10}, {"dram", 4}}, {{0, {0, 1}, 1000, 0}});
  d.engine.run();
  CHECK(d.done[0] == 250);
}

TEST_CASE("water-filling with a per-transfer cap", "[engine][link]") {
  // Link 12 B/ns; A capped at 2, B and C uncapped share the remaining 10: 5 each.
  // A (200 B) ends at 100; B, C have 500 B left, then 6 each: 100 + ceil(500 / 6) = 184.
  Driver d({{"pcie", 12}}, {{0, {0}, 200, 2}, {0, {0}, 1000, 0}, {0, {0}, 1000, 0}});
  d.engine.step();
  d.engine.step();
  d.engine.step();
  CHECK(d.net.rate_of((uint64_t{1} << 32) | 0) == 2);
  CHECK(d.net.rate_of((uint64_t{1} << 32) | 1) == 5);
  CHECK(d.net.rate_of((uint64_t{1} << 32) | 2) == 5);
  d.engine.run();
  CHECK(d.done == std::vector<int64_t>{100, 184, 184});
}

TEST_CASE("max-min fairness across links of different speeds", "[engine][link]") {
  // X = 10, Y = 4. T1 over X, T2 over X and Y, T3 over Y. Y is the bottleneck: T2 = T3 = 2;
  // T1 takes what is left of X: 8.
  Driver d({{"x", 10}, {"y", 4}}, {{0, {0}, 8000, 0}, {0, {0, 1}, 8000, 0}, {0, {1}, 8000, 0}});
  for (int i = 0; i < 3; ++i) d.engine.step();
  CHECK(d.net.rate_of((uint64_t{1} << 32) | 0) == 8);
  CHECK(d.net.rate_of((uint64_t{1} << 32) | 1) == 2);
  CHECK(d.net.rate_of((uint64_t{1} << 32) | 2) == 2);
  d.engine.run();
  // T1 ends at 1000. Then T2 and T3 still share Y at 2 each: they end at 4000.
  CHECK(d.done == std::vector<int64_t>{1000, 4000, 4000});
}

TEST_CASE("capped transfers whose caps fit every link run at their caps, at or over capacity they share",
          "[engine][link]") {
  // The fast path (caps fit: rates are the caps) and progressive filling agree with the closed forms.
  // Host DRAM 40 shared by H2D (cap 12) and D2H (cap 13): 25 < 40, each at its cap.
  Driver fit({{"h2d", 16}, {"d2h", 16}, {"dram", 40}}, {{0, {0, 2}, 1200, 12}, {0, {1, 2}, 1300, 13}});
  fit.engine.run();
  CHECK(fit.done == std::vector<int64_t>{100, 100});
  // Caps adding up to exactly the link (12 + 13 = 25): still each at its cap (max-min fair).
  Driver tie({{"dram", 25}}, {{0, {0}, 1200, 12}, {0, {0}, 1300, 13}});
  tie.engine.run();
  CHECK(tie.done == std::vector<int64_t>{100, 100});
  // Over the link (12 + 13 > 20): 10 each until A ends at 120; B's last 100 B alone at its cap 13:
  // 120 + ceil(100 / 13) = 128.
  Driver over({{"dram", 20}}, {{0, {0}, 1200, 12}, {0, {0}, 1300, 13}});
  over.engine.run();
  CHECK(over.done == std::vector<int64_t>{120, 128});
}
