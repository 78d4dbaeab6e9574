// The MPI plugin's completion loop (sim/distributed/poll_backoff.h), on a simulated clock: how
// many tests it makes and how late it sees a completion, against the closed forms.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/distributed/poll_backoff.h"

namespace {

using protwin::sim::PollBackoff;
using protwin::sim::poll_until_done;

struct Run {
  long tests = 0;
  double seen_s = 0;  // the clock when the completion was seen
};

// A request complete from `done_s` on; every nap advances the clock by exactly its length.
Run simulate(const PollBackoff& b, double done_s) {
  double clock = 0;
  Run r;
  r.tests = poll_until_done(b, [&] { return clock >= done_s ? 1 : 0; }, [&](double s) { clock += s; });
  r.seen_s = clock;
  return r;
}

}  // namespace

TEST_CASE("poll back-off: naps double from the first up to the cap", "[poll_backoff]") {
  const PollBackoff b{20e-6, 250e-6};
  CHECK(b.nap_s(0) == Approx(20e-6));
  CHECK(b.nap_s(1) == Approx(40e-6));
  CHECK(b.nap_s(3) == Approx(160e-6));
  CHECK(b.nap_s(4) == Approx(250e-6));
  CHECK(b.nap_s(1000) == Approx(250e-6));
  const PollBackoff fixed{20e-6, 20e-6};
  CHECK(fixed.nap_s(7) == Approx(20e-6));
}

TEST_CASE("poll back-off: tests and lateness match the closed forms", "[poll_backoff]") {
  const PollBackoff b{20e-6, 250e-6};
  // Closed form by hand: tests at 0, 20, 60, 140, 300 us, then every 250 us (550, 800, ...).
  // A request done at once is seen by the first test; at 100 us by the one at 140 us (4 tests);
  // after a 10 ms wait by the first at 300 + 250 k >= 10000: k = 39, 5 + 39 = 44 tests, seen at
  // 10050 us. A fixed 20 us nap needs 501 tests for about the same wait.
  CHECK(simulate(b, 0).tests == 1);
  CHECK(simulate(b, 100e-6).tests == 4);
  CHECK(simulate(b, 100e-6).seen_s == Approx(140e-6));
  CHECK(simulate(b, 10e-3).tests == 44);
  CHECK(simulate(b, 10e-3).seen_s == Approx(10.05e-3));
  CHECK(simulate(PollBackoff{20e-6, 20e-6}, 9.99e-3).tests == 501);  // tests at 20 k us, k = 0..500
  // The general forms over many completion times: the count, and the lateness below min(cap,
  // done + first) (and never below the fixed nap's promptness for a request done at once).
  for (const PollBackoff& p : {b, PollBackoff{20e-6, 20e-6}, PollBackoff{50e-6, 2e-3}})
    for (double done = 1e-6; done < 0.05; done *= 1.37) {
      const Run r = simulate(p, done);
      INFO("first " << p.first_s << " cap " << p.cap_s << " done at " << done);
      CHECK(r.tests == p.tests_until(done));
      CHECK(r.seen_s >= done);
      CHECK(r.seen_s - done < p.latency_bound_s(done) + 1e-12);
    }
}

TEST_CASE("poll back-off: an error ends the wait at once", "[poll_backoff]") {
  int calls = 0;
  const long tests = poll_until_done(PollBackoff{}, [&] { return ++calls < 3 ? 0 : -1; }, [](double) {});
  CHECK(tests == -1);
  CHECK(calls == 3);
}
