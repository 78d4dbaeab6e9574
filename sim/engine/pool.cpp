#include "sim/engine/pool.h"

#include "traces/error.h"

namespace protwin::sim {

Pool::Pool(std::string name, Bytes capacity, Bytes initial)
    : name_(std::move(name)),
      capacity_(capacity.n),
      current_(initial.n),
      high_water_(initial.n),
      high_water_at_(0) {
  PROTWIN_CHECK(capacity.n >= 0, "pool ", name_, ": capacity must be >= 0 bytes, got ", capacity.n);
  PROTWIN_CHECK(initial.n >= 0 && initial.n <= capacity.n, "pool ", name_, ": initial ", initial.n,
                " bytes must be within 0..capacity ", capacity.n);
  curve_.emplace_back(SimTime(0), initial);
}

void Pool::fail(const std::string& who, int64_t delta, SimTime now) const {
  const int64_t next = current_ + delta;
  if (next > capacity_) {
    throw Error(detail::concat(who, ": pool ", name_, " over capacity at ", now.ns, " ns: ", next,
                               " bytes needed (+", delta, "), capacity ", capacity_,
                               "\nhint: lower the plan's memory or raise the pool's capacity_bytes"));
  }
  throw Error(detail::concat(who, ": pool ", name_, " below zero at ", now.ns, " ns: ", next,
                             " bytes after ", delta,
                             "\nhint: a free without a matching allocation, or frees ordered "
                             "before their allocations"));
}

}  // namespace protwin::sim
