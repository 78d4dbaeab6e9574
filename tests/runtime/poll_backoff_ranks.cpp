// Test helper (issue 23), run by CTest as `mpirun -np 2 protwin_rt_poll_backoff_ranks`, once with
// Open MPI's single-copy transfers off and once as the host permits: how a rank waits for a late
// peer in a collective, against the closed forms of sim/distributed/poll_backoff.h.
//   Rank 0 sleeps 10 ms, then joins a 4 MiB all-gather rank 1 entered at once. On rank 1:
//   1. its MPI completion tests during the wait E are at most PollBackoff::tests_until(E) of the
//      policy in force (20 us naps, or 20 us doubling to 250 us with single copy): real naps are
//      never shorter than asked, so this holds on any load; with single copy it is 44 for 10 ms,
//      below what 20 us naps make (about 100 on this machine: each nap lasts ~100 us);
//   2. backing off (single copy), it sees the completion at most the latency bound (250 us) + 3 ms
//      of scheduling slack after rank 0 joined plus the all-gather's own time with both ranks
//      punctual (median of 5). Not checked with 20 us naps: there the transfer is a pipeline of
//      32 KiB fragments that both ranks' tests drive, whose time after a wait varies by more than
//      the slack on a loaded machine (seen: +4.4 ms) while the naps cannot add more than 20 us.
//   With OMPI_MCA_btl_vader_single_copy_mechanism=none the group must report no single copy;
//   without it, what Open MPI chose after its own check must be what calibrate --ranks predicts
//   from its probe of the host (cli/rank_single_copy.h).
// Run alone (RUN_SERIAL): a loaded machine wakes a sleeping rank late (check 2).
// Exit 0: both hold (each rank prints its numbers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "cli/rank_single_copy.h"
#include "runtime/comm/rank_group.h"
#include "tests/runtime/two_ranks.h"
#include "sim/distributed/poll_backoff.h"
#include "traces/error.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main() {
  using namespace protwin::rt;
  try {
    RankGroup& ranks = testing::two_ranks();
    const char* mechanism = std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism");
    const bool forced_off = mechanism && std::strcmp(mechanism, "none") == 0;
    const protwin::sim::PollBackoff policy =
        ranks.single_copy() ? protwin::sim::PollBackoff{20e-6, 250e-6} : protwin::sim::PollBackoff{20e-6, 20e-6};
    const at::Tensor buf = at::ones({int64_t{1} << 20}, at::kFloat);  // 4 MiB
    std::vector<double> punctual;
    for (int i = 0; i < 5; ++i) {
      ranks.all_gather(0.0);
      const double t0 = now_s();
      ranks.all_gather(buf);
      punctual.push_back(now_s() - t0);
    }
    std::sort(punctual.begin(), punctual.end());
    const double transfer_s = punctual[2], late_s = 10e-3;

    ranks.all_gather(0.0);
    double joined = 0, waited = 0;
    long long tests = 0;
    if (ranks.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(late_s));
      joined = now_s();
      ranks.all_gather(buf);
    } else {
      const long long t0 = ranks.completion_tests();
      const double start = now_s();
      ranks.all_gather(buf);
      waited = now_s();
      tests = ranks.completion_tests() - t0;
      waited -= start;
      joined = -start;  // sent below as this rank's start, to place rank 0's join on its clock
    }
    // steady_clock is the host's CLOCK_MONOTONIC, shared by both processes.
    const std::vector<double> all = ranks.all_gather(ranks.rank() == 0 ? joined : 0.0);
    const bool agrees = forced_off ? !ranks.single_copy() : ranks.single_copy() == protwin::cli::single_copy_permitted();
    bool ok = agrees;
    if (ranks.rank() == 1) {
      const double start = -joined, lateness = start + waited - all[0] - transfer_s;
      const long bound = policy.tests_until(waited);
      const double late_bound = policy.latency_bound_s(waited) + 3e-3;
      const bool tests_ok = tests <= bound, late_ok = !ranks.single_copy() || lateness <= late_bound;
      std::printf("rank 1 (%s): waited %.2f ms, %lld tests (closed form <= %ld)%s; seen %.3f ms after the peer joined and "
                  "the transfer (%.3f ms; bound %.3f ms)%s\n",
                  ranks.single_copy() ? "single copy, backing off" : "20 us naps", waited * 1e3, tests, bound,
                  tests_ok ? "" : " FAIL", lateness * 1e3, transfer_s * 1e3, late_bound * 1e3, late_ok ? "" : " FAIL");
      ok = ok && tests_ok && late_ok;
    }
    if (!agrees)
      std::printf("rank %d: Open MPI %s single copy, %s FAIL\n", ranks.rank(), ranks.single_copy() ? "uses" : "does not use",
                  forced_off ? "although forced off" : "unlike calibrate's probe of the host");
    const std::vector<double> verdict = ranks.all_gather(ok ? 1.0 : 0.0);
    return *std::min_element(verdict.begin(), verdict.end()) > 0 ? 0 : 1;
  } catch (const protwin::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
