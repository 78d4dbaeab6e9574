// EventQueue: the pending events of an Engine, a binary min-heap keyed (time, priority, sequence).
//
// Ordering invariants (as in ns-3 scheduler.h and SimPy core.py):
//  1. Events run in non-decreasing time.
//  2. At equal time, the lower priority value runs first.
//  3. At equal (time, priority), the event scheduled first (lower sequence) runs first. Sequence
//     numbers are unique and increase with every schedule(), so the order is total and a run is
//     deterministic: the same schedule() calls give the same event order.
// An event is a plain struct (handler pointer + 64-bit payload): no std::function, no allocation
// per event once the heap has grown.
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

struct Event {
  int64_t time = 0;      // ns
  int64_t priority = 0;  // lower first at equal time
  uint64_t sequence = 0; // scheduling order: lower first at equal (time, priority)
  Handler* handler = nullptr;
  uint64_t payload = 0;
};

// True if `a` runs before `b`.
inline bool runs_before(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.sequence < b.sequence;
}

class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  void reserve(size_t n) { heap_.reserve(n); }
  void clear() { heap_.clear(); }

  void push(const Event& e) {
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
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
  void sift_up(size_t i) {
    const Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!runs_before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

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
