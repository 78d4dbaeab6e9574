// Strong types for simulated time and byte counts (DESIGN §4, §10).
//
// Time is int64 nanoseconds; 1 GB/s is exactly 1 byte/ns, so a transfer of b bytes at g GB/s
// takes b/g ns, rounded up and never to zero. Unit suffixes (_ns, _bytes, _GBps) appear at every
// I/O edge; inside C++ these types carry the unit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace protwin {

struct SimTime {
  int64_t ns = 0;
  constexpr SimTime() = default;
  constexpr explicit SimTime(int64_t n) : ns(n) {}
  static constexpr SimTime max() { return SimTime(std::numeric_limits<int64_t>::max()); }
  constexpr double seconds() const { return static_cast<double>(ns) * 1e-9; }
  constexpr SimTime operator+(SimTime o) const { return SimTime(ns + o.ns); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ns - o.ns); }
  constexpr SimTime& operator+=(SimTime o) { ns += o.ns; return *this; }
  constexpr bool operator==(SimTime o) const { return ns == o.ns; }
  constexpr bool operator!=(SimTime o) const { return ns != o.ns; }
  constexpr bool operator<(SimTime o) const { return ns < o.ns; }
  constexpr bool operator<=(SimTime o) const { return ns <= o.ns; }
  constexpr bool operator>(SimTime o) const { return ns > o.ns; }
  constexpr bool operator>=(SimTime o) const { return ns >= o.ns; }
};

// The simulated clock's horizon, 2^62 ns (about 146 years): simulators and cost models refuse
// times beyond it (the plan's work or the rates are out of range) instead of overflowing int64.
inline constexpr int64_t kSimHorizonNs = int64_t{1} << 62;

struct Bytes {
  int64_t n = 0;
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t b) : n(b) {}
  constexpr Bytes operator+(Bytes o) const { return Bytes(n + o.n); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n - o.n); }
  constexpr Bytes& operator+=(Bytes o) { n += o.n; return *this; }
  constexpr bool operator==(Bytes o) const { return n == o.n; }
  constexpr bool operator!=(Bytes o) const { return n != o.n; }
  constexpr bool operator<(Bytes o) const { return n < o.n; }
  constexpr bool operator<=(Bytes o) const { return n <= o.n; }
  constexpr bool operator>(Bytes o) const { return n > o.n; }
  constexpr bool operator>=(Bytes o) const { return n >= o.n; }
};

// Nanoseconds (double) to SimTime: rounded up so that no positive duration becomes zero; past
// the horizon (or nan) it saturates at SimTime::max(), which the simulator refuses by name.
inline SimTime ceil_ns(double ns) {
  if (ns <= 0) return SimTime(0);
  if (!(ns < static_cast<double>(kSimHorizonNs))) return SimTime::max();
  const double up = std::ceil(ns);
  return SimTime(up < 1 ? 1 : static_cast<int64_t>(up));
}

// Seconds (double) to SimTime, rounded up so that no positive duration becomes zero.
inline SimTime from_seconds(double s) { return ceil_ns(s * 1e9); }

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * kKiB;
inline constexpr int64_t kGiB = 1024 * kMiB;

// a / b rounded up, for positive b (a chunk's shard per rank, a tensor's part per TP rank).
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace protwin
