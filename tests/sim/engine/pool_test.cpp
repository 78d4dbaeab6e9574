// Oracles: the exact error messages (DESIGN §9) and hand-written step curves.
#include <catch2/catch.hpp>

#include "sim/engine/pool.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::sim;

TEST_CASE("Pool tracks current, high-water and a step curve", "[engine][pool]") {
  Pool p("gpu", Bytes(100), Bytes(10));
  auto who = [] { return std::string("test"); };
  p.change(50, SimTime(5), who);
  p.change(0, SimTime(6), who);  // no point for a zero change
  p.change(-30, SimTime(7), who);
  p.change(40, SimTime(7), who);
  CHECK(p.current() == Bytes(70));
  CHECK(p.high_water() == Bytes(70));
  CHECK(p.high_water_at() == SimTime(7));
  const std::vector<std::pair<SimTime, Bytes>> curve = {
      {SimTime(0), Bytes(10)}, {SimTime(5), Bytes(60)}, {SimTime(7), Bytes(30)}, {SimTime(7), Bytes(70)}};
  CHECK(p.curve() == curve);
}

TEST_CASE("Pool over capacity names the op and the pool", "[engine][pool]") {
  Pool p("gpu", Bytes(25769803776), Bytes(25768755200));
  auto who = [] { return std::string("plan op 17 (h2d, stream h2d)"); };
  CHECK_THROWS_WITH(p.change(1048577, SimTime(1500), who),
                    "plan op 17 (h2d, stream h2d): pool gpu over capacity at 1500 ns: 25769803777 "
                    "bytes needed (+1048577), capacity 25769803776\n"
                    "hint: lower the plan's memory or raise the pool's capacity_bytes");
  CHECK(p.current() == Bytes(25768755200));  // unchanged
  p.change(1048576, SimTime(1500), who);     // exactly full is fine
  CHECK(p.current() == p.capacity());
}

TEST_CASE("Pool below zero is an error", "[engine][pool]") {
  Pool p("pinned", Bytes(100), Bytes(0));
  auto who = [] { return std::string("plan op 3 (d2h, stream d2h)"); };
  p.change(1048576 / 16384, SimTime(0), who);
  CHECK_THROWS_WITH(p.change(-65, SimTime(42), who),
                    "plan op 3 (d2h, stream d2h): pool pinned below zero at 42 ns: -1 bytes after -65\n"
                    "hint: a free without a matching allocation, or frees ordered before their "
                    "allocations");
}
