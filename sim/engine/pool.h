// Pool: bytes with a capacity and a high-water mark (DESIGN §4): GPU memory, pinned host,
// pageable host. Records a step curve with one point after every change.
//
// change() refuses to go over capacity or below zero with a protwin::Error that names the cause
// (a callable, invoked only on failure, e.g. "plan op 17 (h2d, stream h2d)") and the pool:
//   <who>: pool gpu over capacity at 1500 ns: 25769803777 bytes needed (+1048576), capacity 25769803776
//   <who>: pool gpu below zero at 1500 ns: -1048576 bytes after -2097152
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/huge_pages.h"
#include "traces/units.h"

namespace protwin::sim {

class Pool {
 public:
  Pool(std::string name, Bytes capacity, Bytes initial);

  // Adds `delta` bytes at time `now` (non-decreasing across calls). `who()` names the cause in
  // errors. The pool is unchanged when it throws.
  template <typename Who>
  void change(int64_t delta, SimTime now, const Who& who) {
    if (delta == 0) return;
    const int64_t next = current_ + delta;
    if (next > capacity_ || next < 0) fail(who(), delta, now);
    current_ = next;
    curve_.emplace_back(now, Bytes(next));
    if (next > high_water_) {
      high_water_ = next;
      high_water_at_ = now;
    }
  }

  const std::string& name() const { return name_; }
  Bytes capacity() const { return Bytes(capacity_); }
  Bytes current() const { return Bytes(current_); }
  Bytes high_water() const { return Bytes(high_water_); }
  SimTime high_water_at() const { return high_water_at_; }  // first time it was reached
  // (time, bytes after the change); the first point is (0, initial).
  const std::vector<std::pair<SimTime, Bytes>>& curve() const { return curve_; }
  std::vector<std::pair<SimTime, Bytes>> take_curve() { return std::move(curve_); }
  // Room for `points` curve points, its pages faulted in now (before the event loop, which then
  // only writes to memory it owns).
  void reserve(size_t points) {
    reserve_huge(curve_, points);
    const size_t n = curve_.size();
    curve_.resize(std::max(points, n));
    curve_.resize(n);
  }

 private:
  [[noreturn]] void fail(const std::string& who, int64_t delta, SimTime now) const;

  std::string name_;
  int64_t capacity_;
  int64_t current_;
  int64_t high_water_;
  SimTime high_water_at_;
  std::vector<std::pair<SimTime, Bytes>> curve_;
};

}  // namespace protwin::sim
