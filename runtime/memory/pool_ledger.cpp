#include "runtime/memory/pool_ledger.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::rt {

PoolLedger::PoolLedger(const std::vector<traces::PoolSpec>& pools) {
  for (const traces::PoolSpec& p : pools) {
    traces::PoolRecord r;
    r.name = p.name;
    r.capacity = p.capacity;
    r.peak = p.initial;
    r.peak_at = SimTime(0);
    r.curve.emplace_back(SimTime(0), p.initial);
    pools_.push_back(r);
    used_.push_back(p.initial.n);
    if (p.name != "gpu") host_used_ += p.initial.n;
  }
  host_peak_ = host_used_;
}

size_t PoolLedger::index(const std::string& pool) const {
  for (size_t i = 0; i < pools_.size(); ++i)
    if (pools_[i].name == pool) return i;
  throw Error("runtime memory: unknown pool \"" + pool + "\"");
}

void PoolLedger::apply(const std::string& where, const std::string& pool, int64_t delta,
                       int64_t t_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = index(pool);
  traces::PoolRecord& r = pools_[i];
  const int64_t next = used_[i] + delta;
  PROTWIN_CHECK(next <= r.capacity.n, where, ": pool ", pool, " over capacity: ", used_[i],
                " bytes in use + ", delta, " > capacity ", r.capacity.n, " bytes");
  PROTWIN_ASSERT(next >= 0, where, ": pool ", pool, " below zero (", next, " bytes)");
  used_[i] = next;
  if (pool != "gpu") {
    host_used_ += delta;
    host_peak_ = std::max(host_peak_, host_used_);
  }
  if (next > r.peak.n) {
    r.peak = Bytes(next);
    r.peak_at = SimTime(t_ns);
  }
  // One curve point per time: a later change at the same time replaces the bytes.
  if (!r.curve.empty() && r.curve.back().first.ns >= t_ns)
    r.curve.back().second = Bytes(next);
  else
    r.curve.emplace_back(SimTime(t_ns), Bytes(next));
}

int64_t PoolLedger::used(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_[index(pool)];
}

int64_t PoolLedger::peak(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_[index(pool)].peak.n;
}

int64_t PoolLedger::host_peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return host_peak_;
}

std::vector<traces::PoolRecord> PoolLedger::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_;
}

}  // namespace protwin::rt
