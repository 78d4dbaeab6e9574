// How `protwin profile` times one op: a warm-up run, then runs until min_seconds have run (within
// the repeat bounds), the last-level cache flushed before every timed run. Shared by the kernel
// benchmarks (profiler.cpp) and the runtime's whole blocks (block_profile.cpp).
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/profile/profiler.h"
#include "traces/op_profile.h"

namespace protwin::rt {

// Evicts the last-level cache (as Nsight Compute's cache control does between kernel replays):
// a training step's ops read inputs that other ops' traffic has pushed out of it.
void flush_caches(int64_t bytes);

// `after_flush` runs untimed after every flush: it brings back into the cache what a step would
// find there (a block's input, just written by the previous block).
template <typename Fn, typename Warm = void (*)()>
traces::OpTimeStats time_runs(Fn&& fn, const ProfileOptions& o, Warm&& after_flush = [] {}) {
  using Clock = std::chrono::steady_clock;
  fn();
  traces::OpTimeStats s;
  double total = 0;
  while (s.count < o.max_repeats && (s.count < o.min_repeats || total < o.min_seconds)) {
    flush_caches(o.flush_bytes);
    after_flush();
    const auto t0 = Clock::now();
    fn();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    total += dt;
    s.add(dt * 1e6);
  }
  return s;
}

}  // namespace protwin::rt
