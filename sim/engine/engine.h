// Engine: a discrete-event kernel (DESIGN §4). An object, never a singleton: several Engines can
// run at once in different threads.
//
// schedule() puts an event in the queue; run() pops events in (time, priority, sequence) order
// (see event_queue.h for the invariants), advances now() to the event's time and calls
// handler->on_event(payload). Handlers may schedule further events, at now() or later, never in
// the past.
#pragma once

#include <cstdint>

#include "sim/engine/event_queue.h"
#include "traces/units.h"

namespace protwin::sim {

class Engine {
 public:
  SimTime now() const { return SimTime(now_); }

  // Schedules handler->on_event(payload) at `at` (>= now()) with `priority` in
  // [kMinPriority, kMaxPriority]. Returns the event's sequence number.
  uint64_t schedule(SimTime at, int64_t priority, Handler* handler, uint64_t payload) {
    if (at.ns < now_ || handler == nullptr || priority < kMinPriority || priority > kMaxPriority ||
        next_sequence_ > kMaxSequence)
      fail_schedule(at, priority);
    const uint64_t seq = next_sequence_++;
    queue_.push(at.ns, order_key(priority, seq), handler, payload);
    return seq;
  }

  // Runs events until the queue is empty. Returns the number of events run.
  uint64_t run();
  // Runs the next event, if any. Returns false when the queue was empty.
  bool step();

  // Time of the next event; SimTime::max() when idle.
  SimTime next_time() const { return queue_.empty() ? SimTime::max() : SimTime(queue_.top().time); }
  uint64_t events_run() const { return events_run_; }
  void reserve(size_t n) { queue_.reserve(n); }

 private:
  [[noreturn]] void fail_schedule(SimTime at, int64_t priority) const;

  EventQueue queue_;
  int64_t now_ = 0;
  uint64_t next_sequence_ = 0;
  uint64_t events_run_ = 0;
};

}  // namespace protwin::sim
