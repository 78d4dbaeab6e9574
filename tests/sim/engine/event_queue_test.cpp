// Oracle: the ordering invariants written in sim/engine/event_queue.h (ns-3 scheduler.h style).
#include <catch2/catch.hpp>

#include <vector>

#include "sim/engine/engine.h"

using namespace protwin;
using namespace protwin::sim;

namespace {
struct Recorder : Handler {
  Engine* engine = nullptr;
  std::vector<std::pair<int64_t, uint64_t>> seen;  // (time, payload)
  void on_event(uint64_t payload) override { seen.emplace_back(engine->now().ns, payload); }
};

// Schedules a follow-up event at the same time from inside a handler.
struct Chainer : Handler {
  Engine* engine = nullptr;
  Recorder* rec = nullptr;
  void on_event(uint64_t payload) override {
    rec->on_event(payload);
    if (payload == 1) engine->schedule(engine->now(), 0, rec, 99);
  }
};
}  // namespace

TEST_CASE("events at equal time run by priority, then by scheduling order", "[engine]") {
  Engine e;
  Recorder r;
  r.engine = &e;
  e.schedule(SimTime(10), 5, &r, 1);
  e.schedule(SimTime(10), -1, &r, 2);
  e.schedule(SimTime(5), 9, &r, 3);
  e.schedule(SimTime(10), 5, &r, 4);  // same (time, priority) as 1: later sequence
  e.schedule(SimTime(10), 0, &r, 5);
  e.schedule(SimTime(20), -100, &r, 6);
  CHECK(e.run() == 6);
  const std::vector<std::pair<int64_t, uint64_t>> expected = {
      {5, 3}, {10, 2}, {10, 5}, {10, 1}, {10, 4}, {20, 6}};
  CHECK(r.seen == expected);
  CHECK(e.now() == SimTime(20));
}

TEST_CASE("an event scheduled at now() by a handler runs after pending events of lower key",
          "[engine]") {
  Engine e;
  Recorder r;
  r.engine = &e;
  Chainer c;
  c.engine = &e;
  c.rec = &r;
  e.schedule(SimTime(0), 0, &c, 1);  // schedules 99 at (0, 0) with a later sequence
  e.schedule(SimTime(0), 0, &r, 2);
  e.schedule(SimTime(0), 1, &r, 3);
  e.run();
  const std::vector<std::pair<int64_t, uint64_t>> expected = {{0, 1}, {0, 2}, {0, 99}, {0, 3}};
  CHECK(r.seen == expected);
}

TEST_CASE("many events come out sorted by (time, priority, sequence)", "[engine]") {
  // Oracle: a stable sort of the inputs by (time, priority).
  Engine e;
  Recorder r;
  r.engine = &e;
  std::vector<std::tuple<int64_t, int64_t, uint64_t>> in;
  uint64_t x = 12345;
  for (uint64_t i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // fixed LCG: deterministic
    const int64_t t = static_cast<int64_t>((x >> 33) % 50), p = static_cast<int64_t>((x >> 20) % 3);
    in.emplace_back(t, p, i);
    e.schedule(SimTime(t), p, &r, i);
  }
  e.run();
  std::stable_sort(in.begin(), in.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                            : std::get<1>(a) < std::get<1>(b);
  });
  REQUIRE(r.seen.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) CHECK(r.seen[i].second == std::get<2>(in[i]));
}

TEST_CASE("scheduling in the past is an internal error", "[engine]") {
  Engine e;
  Recorder r;
  r.engine = &e;
  e.schedule(SimTime(10), 0, &r, 0);
  e.run();
  CHECK_THROWS_WITH(e.schedule(SimTime(9), 0, &r, 0),
                    Catch::Contains("event scheduled in the past: at 9 ns, now 10 ns"));
}

TEST_CASE("priorities outside 16 bits and a handler-less event are internal errors", "[engine]") {
  Engine e;
  Recorder r;
  r.engine = &e;
  CHECK_NOTHROW(e.schedule(SimTime(0), kMinPriority, &r, 0));
  CHECK_NOTHROW(e.schedule(SimTime(0), kMaxPriority, &r, 1));
  CHECK_THROWS_WITH(e.schedule(SimTime(0), kMaxPriority + 1, &r, 2), Catch::Contains("event priority 32768 outside"));
  CHECK_THROWS_WITH(e.schedule(SimTime(0), kMinPriority - 1, &r, 2), Catch::Contains("event priority -32769 outside"));
  CHECK_THROWS(e.schedule(SimTime(0), 0, nullptr, 2));
  e.run();
  REQUIRE(r.seen.size() == 2);
  CHECK(r.seen[0].second == 0);  // the lowest priority first
  CHECK(r.seen[1].second == 1);
}
