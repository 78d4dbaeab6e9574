// EventQueue: the pending events of an Engine, a binary min-heap keyed (time, priority, sequence).
//
// Ordering invariants (as in ns-3 scheduler.h and SimPy core.py):
//  1. Events run in non-decreasing time.
//  2. At equal time, the lower priority value runs first.
//  3. At equal (time, priority), the event scheduled first (lower sequence) runs first. Sequence
//     numbers are unique and increase with every schedule(), so the order is total and a run is
//     deterministic: the same schedule() calls give the same event order.
// An event is a plain struct (handler pointer + 64-bit payload): no std::function, no allocation
// per event once the heap has grown. Priority and sequence share one 64-bit key (priority in the
// top 16 bits, offset to be unsigned; sequence below), so an order test is two compares and an
// event is 32 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace protwin::sim {

// Receives events. Implementations decode `payload` themselves (an op index, a slot + version...).
class Handler {
 public:
  virtual void on_event(uint64_t payload) = 0;

 protected:
  ~Handler() = default;  // never deleted through a Handler*
};

// Priorities an event may have, and sequence numbers before the key would overflow.
inline constexpr int64_t kMinPriority = -(int64_t{1} << 15), kMaxPriority = (int64_t{1} << 15) - 1;
inline constexpr int kSequenceBits = 48;
inline constexpr uint64_t kMaxSequence = (uint64_t{1} << kSequenceBits) - 1;

// (priority, sequence) as one unsigned key ordered like the pair. Preconditions: priority in
// [kMinPriority, kMaxPriority], sequence <= kMaxSequence.
constexpr uint64_t order_key(int64_t priority, uint64_t sequence) {
  return (static_cast<uint64_t>(priority - kMinPriority) << kSequenceBits) | sequence;
}

struct Event {
  int64_t time = 0;  // ns
  uint64_t key = 0;  // order_key(priority, sequence): lower first at equal time
  Handler* handler = nullptr;
  uint64_t payload = 0;
};

// True if `a` runs before `b`.
inline bool runs_before(const Event& a, const Event& b) {
  return a.time != b.time ? a.time < b.time : a.key < b.key;
}

class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  void reserve(size_t n) { heap_.reserve(n); }

  // The fields one by one: the new event is compared in registers and written once, at its final
  // slot (an Event built on the stack and copied in whole costs a store-forwarding stall).
  void push(int64_t time, uint64_t key, Handler* handler, uint64_t payload) {
    size_t i = heap_.size();
    heap_.emplace_back();
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      const Event& p = heap_[parent];
      if (time != p.time ? time > p.time : key > p.key) break;  // !runs_before(new, parent)
      heap_[i] = p;
      i = parent;
    }
    Event& slot = heap_[i];
    slot.time = time;
    slot.key = key;
    slot.handler = handler;
    slot.payload = payload;
  }

  // Removes and returns the first event. Precondition: !empty().
  Event pop() {
    Event out = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
    return out;
  }

 private:
  // Places `e` starting from the root (the root slot is free).
  void sift_down(const Event& e) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && runs_before(heap_[child + 1], heap_[child])) ++child;
      if (!runs_before(heap_[child], e)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
};

}  // namespace protwin::sim
