#include "sim/engine/engine.h"

#include "traces/error.h"

namespace protwin::sim {

void Engine::fail_schedule(SimTime at, int64_t priority) const {
  PROTWIN_ASSERT(at.ns >= now_, "event scheduled in the past: at ", at.ns, " ns, now ", now_, " ns");
  PROTWIN_ASSERT(priority >= kMinPriority && priority <= kMaxPriority, "event priority ", priority,
                 " outside ", kMinPriority, "..", kMaxPriority);
  PROTWIN_ASSERT(next_sequence_ <= kMaxSequence, "more than ", kMaxSequence, " events scheduled");
  throw Error("internal error: event without a handler", ErrorKind::kInternal);
}

bool Engine::step() {
  if (queue_.empty()) return false;
  const Event e = queue_.pop();
  now_ = e.time;
  ++events_run_;
  e.handler->on_event(e.payload);
  return true;
}

uint64_t Engine::run() {
  const uint64_t before = events_run_;
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    now_ = e.time;
    ++events_run_;
    e.handler->on_event(e.payload);
  }
  return events_run_ - before;
}

}  // namespace protwin::sim
