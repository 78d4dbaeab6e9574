// How the MPI plugin waits for a non-blocking collective (issue 23): MPI_Test, then a nap that
// starts at `first_s` and doubles after every unsuccessful test up to `cap_s`.
//
// Why: on the emulated device the host cores ARE the device, so every wake-up of a rank's
// collective thread preempts that rank's compute (measured on this 2-core KVM guest: 50-70 us of
// compute lost per wake-up; docs/RUNTIME.md, "Compute beside the collectives"). A fixed 20 us nap
// woke ~10,000 times a second while a rank waited for its peer; on a real GPU the collective's
// kernels wait on the GPU and take no host core. The back-off keeps the first tests as prompt as
// the fixed nap (a collective that completes at once is seen as early) and bounds the added
// completion latency by the time already waited (closed forms below; the collective probe
// measures the resulting alpha, nothing assumes it).
//
// Header-only and MPI-free, so the closed forms are tested without mpirun
// (tests/sim/distributed/test_poll_backoff.cpp).
#pragma once

#include <algorithm>

namespace protwin::sim {

struct PollBackoff {
  double first_s = 20e-6;
  double cap_s = 250e-6;

  // The nap after the k-th unsuccessful test (k = 0, 1, ...): min(first * 2^k, cap).
  double nap_s(int k) const {
    double nap = first_s;
    for (int i = 0; i < k && nap < cap_s; ++i) nap *= 2;
    return std::min(nap, cap_s);
  }

  // Tests made, with naps of exactly nap_s(k), until a request that completes `done_s` after the
  // first test is seen complete: 1 + the smallest k with nap_s(0) + ... + nap_s(k - 1) >= done_s.
  long tests_until(double done_s) const {
    long k = 0;
    double t = 0;
    while (t < done_s) t += nap_s(static_cast<int>(k++));
    return k + 1;
  }

  // The completion is seen less than this long after it happens (done_s > 0): the last nap,
  // which is at most the time waited before it plus first (doubling) and at most cap.
  double latency_bound_s(double done_s) const { return std::min(cap_s, done_s + first_s); }
};

// Completes a request: `test()` returns 1 (done), 0 (not yet) or -1 (error); `sleep(s)` naps.
// Returns the tests made (>= 1), or -1 on an error.
template <class Test, class Sleep>
long poll_until_done(const PollBackoff& backoff, Test&& test, Sleep&& sleep) {
  for (long k = 0;; ++k) {
    const int rc = test();
    if (rc < 0) return -1;
    if (rc > 0) return k + 1;
    sleep(backoff.nap_s(static_cast<int>(std::min<long>(k, 64))));
  }
}

}  // namespace protwin::sim
