#include "sim/engine/resource.h"

#include "traces/error.h"

namespace protwin::sim {

Resource::Resource(Engine& engine, int capacity) : engine_(&engine), capacity_(capacity) {
  PROTWIN_ASSERT(capacity >= 1, "resource capacity must be >= 1, got ", capacity);
}

void Resource::enqueue(Handler* client, uint64_t payload, int64_t priority) {
  waiters_.push_back(Waiter{client, payload, priority});
}

void Resource::grant_next() {
  PROTWIN_ASSERT(in_use_ > 0, "resource released more often than acquired");
  // The slot passes straight to the first waiter: in_use_ stays the same, so no later acquire()
  // can overtake it before its grant event runs.
  const Waiter w = waiters_.front();
  waiters_.pop_front();
  engine_->schedule(engine_->now(), w.priority, w.client, w.payload);
}

}  // namespace protwin::sim
