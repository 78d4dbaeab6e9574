// Test helper (issue 23), run by CTest as `mpirun -np 2 protwin_rt_collective_load_ranks`: the
// rank profile's background collectives (runtime/profile/background_load.h, CollectiveLoad) stop
// only when every rank has asked, after the same run on every rank. Oracles:
//   1. Rank 0 asks to stop at once, rank 1 after 150 ms: both return (a rank leaving alone would
//      leave its peer waiting in a collective: the CTest timeout fails it), with equal run counts,
//      and rank 0 kept running collectives until its peer was done (more than one run).
//   A synthetic 2 ms sleep before each all-gather and reduce-scatter (RankGroup's test hook) keeps
//   the runs slow, so the test loads the cores little.
// Exit 0: it holds on every rank.
#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/comm/rank_group.h"
#include "runtime/profile/background_load.h"
#include "traces/error.h"

int main() {
  using namespace protwin::rt;
  using Clock = std::chrono::steady_clock;
  try {
    RankGroup& ranks = RankGroup::world();
    if (ranks.size() != 2) {
      std::fprintf(stderr, "run under mpirun -np 2\n");
      return 1;
    }
    const double delay_us = 2000;
    ranks.set_extra_fixed_cost_us(delay_us);
    long runs = 0;
    double stop_s = 0;
    {
      CollectiveLoad load(ranks, int64_t{256} << 10);
      if (ranks.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
      const auto t0 = Clock::now();
      load.stop();
      stop_s = std::chrono::duration<double>(Clock::now() - t0).count();
      runs = load.runs();
    }
    ranks.set_extra_fixed_cost_us(0);
    const std::vector<double> all = ranks.all_gather(static_cast<double>(runs));  // the load has stopped
    const bool equal = all[0] == all[1];
    const bool waited = ranks.rank() != 0 || runs > 1;
    std::printf("rank %d: %ld runs (ranks: %.0f, %.0f)%s; stop() took %.3f s%s\n", ranks.rank(), runs, all[0], all[1],
                equal ? "" : " FAIL: unequal", stop_s, waited ? "" : " FAIL: left alone");
    return equal && waited ? 0 : 1;
  } catch (const protwin::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
