// Resource: a FIFO server with capacity n (DESIGN §4): a stream (n = 1), a pool of CPU workers.
//
// acquire() grants a slot at once when one is free; otherwise the client waits in FIFO order and
// is granted by a later release(), through an event at the release time with the priority the
// client gave. Nothing domain-specific: clients are Handlers with a payload.
#pragma once

#include <cstdint>
#include <deque>

#include "sim/engine/engine.h"

namespace protwin::sim {

class Resource {
 public:
  Resource(Engine& engine, int capacity);

  // True if the slot is granted now (no event follows). Otherwise the client is queued and
  // client->on_event(payload) runs when its turn comes; it then holds a slot.
  bool acquire(Handler* client, uint64_t payload, int64_t priority = 0) {
    if (in_use_ < capacity_ && waiters_.empty()) {
      ++in_use_;
      return true;
    }
    enqueue(client, payload, priority);
    return false;
  }
  // Frees a slot; the first waiter (if any) gets it.
  void release() {
    if (waiters_.empty() && in_use_ > 0) {
      --in_use_;
      return;
    }
    grant_next();
  }

  int capacity() const { return capacity_; }
  int in_use() const { return in_use_; }
  size_t waiting() const { return waiters_.size(); }

 private:
  void enqueue(Handler* client, uint64_t payload, int64_t priority);
  void grant_next();

  struct Waiter {
    Handler* client;
    uint64_t payload;
    int64_t priority;
  };
  Engine* engine_;
  int capacity_;
  int in_use_ = 0;
  std::deque<Waiter> waiters_;
};

}  // namespace protwin::sim
