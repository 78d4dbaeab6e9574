#include "sim/engine/link.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "traces/error.h"

namespace protwin::sim {

namespace {
// Relative remaining bytes under which a transfer counts as done (float noise of rate changes).
constexpr double kDoneRelative = 1e-12;
// The fast path of reallocate() needs every link's capacity left over by the caps to exceed this
// fraction of it.
constexpr double kCapsMargin = 1e-9;
}  // namespace

LinkNetwork::LinkNetwork(Engine& engine, std::vector<LinkCapacity> links,
                         int64_t completion_priority)
    : engine_(&engine), links_(std::move(links)), completion_priority_(completion_priority) {
  for (const auto& l : links_) {
    PROTWIN_CHECK(l.GBps > 0 && std::isfinite(l.GBps), "link ", l.name,
                  ": bandwidth must be > 0 GB/s, got ", l.GBps);
  }
  residual_.resize(links_.size());
  unfrozen_.resize(links_.size());
  share_.resize(links_.size());
}

void LinkNetwork::start(const int* route, int n_route, double bytes, double max_GBps,
                        Handler* client, uint64_t payload) {
  PROTWIN_ASSERT(n_route >= 1 && n_route <= kMaxRoute, "transfer route of ", n_route, " links");
  PROTWIN_ASSERT(bytes > 0, "empty transfer");
  PROTWIN_ASSERT(max_GBps >= 0, "negative rate cap");
  int slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int>(slots_.size());
    slots_.emplace_back();
  }
  Transfer& t = slots_[static_cast<size_t>(slot)];
  t.n_route = n_route;
  for (int i = 0; i < kMaxRoute; ++i) {
    t.route[static_cast<size_t>(i)] = i < n_route ? route[i] : -1;
    if (i < n_route) {
      PROTWIN_ASSERT(route[i] >= 0 && route[i] < n_links(), "transfer over unknown link ", route[i]);
      for (int j = 0; j < i; ++j) PROTWIN_ASSERT(route[j] != route[i], "link twice in a route");
    }
  }
  t.remaining = bytes;
  t.done_eps = bytes * kDoneRelative;
  t.rate = 0;
  t.cap = max_GBps;
  t.updated = engine_->now().ns;
  t.client = client;
  t.client_payload = payload;
  active_.push_back(slot);
  ++started_;
  reallocate();
}

double LinkNetwork::rate_of(uint64_t client_payload) const {
  for (int s : active_) {
    const Transfer& t = slots_[static_cast<size_t>(s)];
    if (t.client_payload == client_payload) return t.rate;
  }
  return -1;
}

void LinkNetwork::reallocate() {
  const size_t n = active_.size();
  if (n == 0) return;
  const size_t nl = links_.size();
  for (size_t l = 0; l < nl; ++l) residual_[l] = links_[l].GBps;
  if (new_rate_.size() < n) new_rate_.resize(n);
  // Fast path, the common case: every transfer has a cap and on every link the caps add up to
  // less than its capacity. Then progressive filling freezes each transfer exactly at its own cap
  // (at each level the lowest remaining cap is below every link's fair share), so the rates are
  // the caps, bit for bit. The margin keeps float rounding of the sums from deciding a tie.
  bool all_capped = true;
  for (size_t k = 0; k < n && all_capped; ++k) {
    Transfer& t = slots_[static_cast<size_t>(active_[k])];
    all_capped = t.cap > 0;
    for (int i = 0; i < t.n_route; ++i) residual_[static_cast<size_t>(t.route[static_cast<size_t>(i)])] -= t.cap;
  }
  if (all_capped) {
    for (size_t l = 0; l < nl && all_capped; ++l) all_capped = residual_[l] > links_[l].GBps * kCapsMargin;
    if (all_capped) {
      for (size_t k = 0; k < n; ++k) new_rate_[k] = slots_[static_cast<size_t>(active_[k])].cap;
      apply_rates();
      return;
    }
  }
  for (size_t l = 0; l < nl; ++l) {
    residual_[l] = links_[l].GBps;
    unfrozen_[l] = 0;
  }
  std::fill(new_rate_.begin(), new_rate_.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
  for (size_t k = 0; k < n; ++k) {
    Transfer& t = slots_[static_cast<size_t>(active_[k])];
    t.frozen = false;
    for (int i = 0; i < t.n_route; ++i) ++unfrozen_[static_cast<size_t>(t.route[static_cast<size_t>(i)])];
  }
  // Progressive filling: all unfrozen transfers rise together to the next level at which a link
  // saturates or a transfer reaches its cap; those freeze at that level.
  size_t left = n;
  while (left > 0) {
    double level = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < nl; ++l) {
      if (unfrozen_[l] == 0) continue;
      share_[l] = std::max(0.0, residual_[l]) / unfrozen_[l];
      level = std::min(level, share_[l]);
    }
    for (size_t k = 0; k < n; ++k) {
      const Transfer& t = slots_[static_cast<size_t>(active_[k])];
      if (!t.frozen && t.cap > 0) level = std::min(level, t.cap);
    }
    // Decide first, then update the links, so every freeze at this level sees the same shares.
    for (size_t k = 0; k < n; ++k) {
      const Transfer& t = slots_[static_cast<size_t>(active_[k])];
      if (t.frozen) continue;
      bool saturated = t.cap > 0 && t.cap <= level;
      for (int i = 0; i < t.n_route && !saturated; ++i) {
        saturated = share_[static_cast<size_t>(t.route[static_cast<size_t>(i)])] <= level;
      }
      if (saturated) new_rate_[k] = level;  // marks it (level > 0)
    }
    for (size_t k = 0; k < n; ++k) {
      Transfer& t = slots_[static_cast<size_t>(active_[k])];
      if (t.frozen || new_rate_[k] == 0) continue;
      t.frozen = true;
      --left;
      for (int i = 0; i < t.n_route; ++i) {
        const auto l = static_cast<size_t>(t.route[static_cast<size_t>(i)]);
        residual_[l] -= level;
        --unfrozen_[l];
      }
    }
    PROTWIN_ASSERT(level > 0 && std::isfinite(level), "water-filling stalled at level ", level);
  }
  apply_rates();
}

void LinkNetwork::apply_rates() {
  const size_t n = active_.size();
  const int64_t now = engine_->now().ns;
  for (size_t k = 0; k < n; ++k) {
    Transfer& t = slots_[static_cast<size_t>(active_[k])];
    if (new_rate_[k] == t.rate) continue;  // unchanged: keep its completion event
    if (t.rate > 0) {
      t.remaining -= t.rate * static_cast<double>(now - t.updated);
      if (t.remaining < 0) t.remaining = 0;
    }
    t.updated = now;
    t.rate = new_rate_[k];
    schedule_completion(active_[k]);
  }
}

void LinkNetwork::schedule_completion(int slot) {
  Transfer& t = slots_[static_cast<size_t>(slot)];
  int64_t dt = 0;
  if (t.remaining > t.done_eps) {
    dt = ceil_ns(t.remaining / t.rate).ns;
    PROTWIN_CHECK(dt < kSimHorizonNs - t.updated, "a transfer of ", t.remaining, " bytes at ", t.rate,
                  " GB/s would end past the simulator's horizon of 2^62 ns (146 years); "
                  "the plan's bytes or the link rates are out of range");
  }
  ++t.version;
  engine_->schedule(SimTime(t.updated + dt), completion_priority_, this,
                    (static_cast<uint64_t>(slot) << 32) | t.version);
}

void LinkNetwork::on_event(uint64_t payload) {
  const auto slot = static_cast<size_t>(payload >> 32);
  const auto version = static_cast<uint32_t>(payload & 0xffffffffu);
  Transfer& t = slots_[slot];
  if (t.version != version) return;  // stale: the rate changed after this was scheduled
  ++t.version;                       // no later event of this slot matches until it is reused
  t.rate = 0;
  Handler* client = t.client;
  const uint64_t client_payload = t.client_payload;
  active_.erase(std::find(active_.begin(), active_.end(), static_cast<int>(slot)));
  free_slots_.push_back(static_cast<int>(slot));
  reallocate();
  client->on_event(client_payload);
}

}  // namespace protwin::sim
