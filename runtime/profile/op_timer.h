// How `protwin profile` times one op: a warm-up run, then runs until min_seconds have run (within
// the repeat bounds), the last-level cache flushed before every timed run. Shared by the kernel
// benchmarks (profiler.cpp) and the runtime's whole blocks (block_profile.cpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "runtime/profile/profiler.h"
#include "traces/op_profile.h"

namespace protwin::rt {

// Evicts the last-level cache (as Nsight Compute's cache control does between kernel replays):
// a training step's ops read inputs that other ops' traffic has pushed out of it.
void flush_caches(int64_t bytes);

// Runs fn once to warm up, then until min_seconds have run and at least `min_runs` runs (at most
// max_repeats); the cache is flushed before every timed run and `after_flush` runs untimed after
// it: it brings back into the cache what a step would find there (a block's input, just written
// by the block before it). Returns each timed run in microseconds.
template <typename Fn, typename Warm>
std::vector<double> timed_runs_us(Fn&& fn, const ProfileOptions& o, Warm&& after_flush, int min_runs) {
  using Clock = std::chrono::steady_clock;
  fn();
  std::vector<double> us;
  double total = 0;
  while (static_cast<int>(us.size()) < o.max_repeats && (static_cast<int>(us.size()) < min_runs || total < o.min_seconds)) {
    flush_caches(o.flush_bytes);
    after_flush();
    const auto t0 = Clock::now();
    fn();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    total += dt;
    us.push_back(dt * 1e6);
  }
  return us;
}

template <typename Fn, typename Warm = void (*)()>
traces::OpTimeStats time_runs(Fn&& fn, const ProfileOptions& o, Warm&& after_flush = [] {}) {
  traces::OpTimeStats s;
  for (double x : timed_runs_us(fn, o, after_flush, o.min_repeats)) s.add(x);
  return s;
}

// As time_runs, but the entry is the median run alone (count 1): a whole block runs tens of
// milliseconds, so a round has only a few runs, and on a shared machine one of them can be
// preempted for several times its length (measured: a gpt2-tiny layer forward of 55 ms once took
// 864 ms); the mean of three would carry it.
template <typename Fn, typename Warm = void (*)()>
traces::OpTimeStats time_runs_median(Fn&& fn, const ProfileOptions& o, Warm&& after_flush = [] {}) {
  traces::OpTimeStats s;
  s.add(traces::median(timed_runs_us(fn, o, after_flush, std::max(3, o.min_repeats))));
  return s;
}

}  // namespace protwin::rt
