// Oracle: FIFO service order written out by hand.
#include <catch2/catch.hpp>

#include <vector>

#include "sim/engine/resource.h"

using namespace protwin;
using namespace protwin::sim;

namespace {
// Client i holds the resource for hold[i] ns from its grant, then releases it.
struct Clients : Handler {
  Engine* engine;
  Resource* res;
  std::vector<int64_t> hold;
  std::vector<int64_t> granted, released;
  enum : uint64_t { kArrive = 0, kGrant = 1, kRelease = 2 };
  void on_event(uint64_t p) override {
    const uint64_t kind = p >> 32, i = p & 0xffffffffu;
    if (kind == kArrive) {
      if (res->acquire(this, (kGrant << 32) | i)) on_event((kGrant << 32) | i);
    } else if (kind == kGrant) {
      granted[i] = engine->now().ns;
      engine->schedule(engine->now() + SimTime(hold[i]), 0, this, (kRelease << 32) | i);
    } else {
      released[i] = engine->now().ns;
      res->release();
    }
  }
};
}  // namespace

TEST_CASE("Resource of capacity 2 serves waiters in FIFO order", "[engine][resource]") {
  Engine e;
  Resource r(e, 2);
  Clients c;
  c.engine = &e;
  c.res = &r;
  // Five clients arrive at t=0,1,2,3,4 and hold 10, 20, 5, 5, 5 ns.
  c.hold = {10, 20, 5, 5, 5};
  c.granted.assign(5, -1);
  c.released.assign(5, -1);
  for (uint64_t i = 0; i < 5; ++i) e.schedule(SimTime(static_cast<int64_t>(i)), 0, &c, i);
  e.run();
  // 0: [0,10)  1: [1,21)  2: waits for 0 -> [10,15)  3: [15,20)  4: waits for 3 -> [20,25)
  CHECK(c.granted == std::vector<int64_t>{0, 1, 10, 15, 20});
  CHECK(c.released == std::vector<int64_t>{10, 21, 15, 20, 25});
  CHECK(r.in_use() == 0);
  CHECK(r.waiting() == 0);
}

TEST_CASE("a released slot goes to the waiter, not to a later arrival", "[engine][resource]") {
  Engine e;
  Resource r(e, 1);
  Clients c;
  c.engine = &e;
  c.res = &r;
  c.hold = {10, 10, 10};
  c.granted.assign(3, -1);
  c.released.assign(3, -1);
  e.schedule(SimTime(0), 0, &c, 0);
  e.schedule(SimTime(5), 0, &c, 1);   // waits
  e.schedule(SimTime(10), 1, &c, 2);  // arrives just after 0's release at t=10
  e.run();
  CHECK(c.granted == std::vector<int64_t>{0, 10, 20});
}
