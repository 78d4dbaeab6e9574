// Byte accounting of a plan's memory pools (gpu, pinned, pageable, ...) while the runtime replays
// it: the emulated device's pool with its hard capacity, and the host pools. Charges follow the
// plan's mem effects (bytes per tensor as the plan sized them), applied at the real times the ops
// start and end, so the measured peak is directly comparable with the plan's validated
// high-water. Thread-safe: every stream worker charges it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::rt {

class PoolLedger {
 public:
  // Pools start at their initial bytes (resident before the first op).
  explicit PoolLedger(const std::vector<traces::PoolSpec>& pools);

  // Adds `delta` bytes to `pool` at `t_ns` (since iteration start). Going over the capacity is a
  // user error naming `where` (the op) and the pool; going below zero is an internal error.
  void apply(const std::string& where, const std::string& pool, int64_t delta, int64_t t_ns);

  int64_t used(const std::string& pool) const;
  int64_t peak(const std::string& pool) const;
  // Peak of the summed host pools (every pool but "gpu").
  int64_t host_peak() const;
  std::vector<traces::PoolRecord> records() const;

 private:
  size_t index(const std::string& pool) const;

  mutable std::mutex mu_;
  std::vector<traces::PoolRecord> pools_;
  std::vector<int64_t> used_;
  int64_t host_used_ = 0, host_peak_ = 0;
};

}  // namespace protwin::rt
