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

// As time_runs, but the entry is the median run alone (count 1): a whole block runs tens of
// milliseconds, so a round has only a few runs, and on a shared machine one of them can be
// preempted for several times its length (measured: a gpt2-tiny layer forward of 55 ms once took
// 864 ms); the mean of three would carry it.
template <typename Fn, typename Warm = void (*)()>
traces::OpTimeStats time_runs_median(Fn&& fn, const ProfileOptions& o, Warm&& after_flush = [] {}) {
  using Clock = std::chrono::steady_clock;
  fn();
  std::vector<double> us;
  double total = 0;
  while (static_cast<int>(us.size()) < o.max_repeats &&
         (static_cast<int>(us.size()) < std::max(3, o.min_repeats) || total < o.min_seconds)) {
    flush_caches(o.flush_bytes);
    after_flush();
    const auto t0 = Clock::now();
    fn();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    total += dt;
    us.push_back(dt * 1e6);
  }
  std::sort(us.begin(), us.end());
  traces::OpTimeStats s;
  s.add(us.size() % 2 ? us[us.size() / 2] : (us[us.size() / 2 - 1] + us[us.size() / 2]) / 2);
  return s;
}

}  // namespace protwin::rt
