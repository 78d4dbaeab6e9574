// LinkNetwork: the Link primitive of DESIGN §4, bandwidth shared by concurrent transfers.
//
// Links have capacities in GB/s (= bytes/ns). A transfer moves `bytes` over a route of 1..3 links
// at once (e.g. PCIe H2D and host DRAM) with an optional own rate cap. Rates are max-min fair
// (progressive filling / water-filling) over all active transfers, recomputed whenever a transfer
// starts or ends. A transfer whose rate changes gets a new completion event; its old one becomes
// stale (a version number in the payload) and is ignored when it fires.
//
// Remaining bytes are doubles; completion times are rounded up to whole ns and a non-empty
// transfer never takes zero time. A transfer whose rate did not change keeps its scheduled
// completion untouched, so unrelated starts and ends never perturb it by rounding.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/engine.h"

namespace protwin::sim {

struct LinkCapacity {
  std::string name;
  double GBps = 0;  // bytes per ns
};

class LinkNetwork final : public Handler {
 public:
  static constexpr int kMaxRoute = 3;

  // Completion events run with `completion_priority` (lower runs first at equal time).
  LinkNetwork(Engine& engine, std::vector<LinkCapacity> links, int64_t completion_priority = 0);

  // Starts a transfer of `bytes` (> 0) over `route` (n_route link indices, 1..3, distinct) with
  // rate cap `max_GBps` (0 = none). client->on_event(payload) is called, from inside the engine's
  // completion event, when the last byte has arrived.
  void start(const int* route, int n_route, double bytes, double max_GBps, Handler* client,
             uint64_t payload);

  int n_links() const { return static_cast<int>(links_.size()); }
  const LinkCapacity& link(int i) const { return links_[static_cast<size_t>(i)]; }
  size_t active() const { return active_.size(); }
  // Current rate (bytes/ns) of the active transfer started with this client payload; -1 if none.
  double rate_of(uint64_t client_payload) const;
  uint64_t transfers_started() const { return started_; }

  void on_event(uint64_t payload) override;  // a completion (slot, version)

 private:
  struct Transfer {
    std::array<int, kMaxRoute> route{-1, -1, -1};
    int n_route = 0;
    double remaining = 0;   // bytes left at `updated`
    double done_eps = 0;    // below this the transfer counts as finished (float noise)
    double rate = 0;        // bytes/ns
    double cap = 0;         // 0 = none
    int64_t updated = 0;    // ns
    uint32_t version = 0;
    bool frozen = false;    // water-filling scratch
    Handler* client = nullptr;
    uint64_t client_payload = 0;
  };

  void reallocate();   // max-min fair rates for all active transfers into new_rate_, then apply_rates()
  void apply_rates();  // new_rate_ to the active transfers; reschedules the changed ones
  void schedule_completion(int slot);

  Engine* engine_;
  std::vector<LinkCapacity> links_;
  int64_t completion_priority_;
  std::vector<Transfer> slots_;
  std::vector<int> free_slots_;
  std::vector<int> active_;        // slot indices, in start order
  std::vector<double> residual_;   // per-link scratch
  std::vector<int> unfrozen_;      // per-link scratch
  std::vector<double> share_;      // per-link scratch
  std::vector<double> new_rate_;   // per-active scratch
  uint64_t started_ = 0;
};

}  // namespace protwin::sim
