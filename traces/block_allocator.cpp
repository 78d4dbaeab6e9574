#include "traces/block_allocator.h"

#include <utility>

#include "traces/error.h"

namespace protwin::traces {

bool BlockAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  return a->addr < b->addr;
}

BlockAllocator::BlockAllocator(int64_t capacity, std::string name, std::function<void(uint64_t)> on_release)
    : capacity_(capacity), name_(std::move(name)), on_release_(std::move(on_release)) {}

BlockAllocator::~BlockAllocator() {
  for (Block* first : segments_) {
    for (Block* b = first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

size_t BlockAllocator::round_size(size_t n) {
  return n < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((n + kMinBlockSize - 1) / kMinBlockSize);
}

size_t BlockAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

BlockAllocator::Block* BlockAllocator::split(Pool& pool, Block* b, size_t size) {
  const size_t rest = b->size - size;
  const bool split_it = b->small ? rest >= kMinBlockSize : rest > kSmallSize;
  if (!split_it) return b;
  auto* tail = new Block{b->addr + size, b->segment, rest, b->small};
  tail->prev = b;
  tail->next = b->next;
  if (b->next) b->next->prev = tail;
  b->next = tail;
  b->size = size;
  pool.insert(tail);
  return b;
}

const BlockAllocator::Block* BlockAllocator::allocate(size_t n) {
  PROTWIN_ASSERT(n > 0, name_, " memory: allocation of 0 bytes (callers hand out no block)");
  const size_t size = round_size(n);
  const bool small = size <= kSmallSize;
  Pool& pool = small ? small_ : large_;
  Block key{0, 0, size, small};
  auto it = pool.lower_bound(&key);
  Block* b = nullptr;
  if (it != pool.end()) {
    b = *it;
    pool.erase(it);
  } else {
    const size_t seg = segment_size(size);
    if (capacity_ > 0 && reserved_.current + static_cast<int64_t>(seg) > capacity_) empty_cache();
    PROTWIN_CHECK(capacity_ <= 0 || reserved_.current + static_cast<int64_t>(seg) <= capacity_, name_,
                  " memory: out of memory allocating ", n, " bytes (a ", seg, "-byte segment; ", reserved_.current,
                  " bytes reserved of the ", capacity_, "-byte capacity, ", allocated_.current, " allocated)");
    b = new Block{next_segment_, next_segment_, seg, small};
    next_segment_ += seg;
    segments_.insert(b);
    reserved_.add(static_cast<int64_t>(seg));
  }
  b = split(pool, b, size);
  b->in_use = true;
  allocated_.add(static_cast<int64_t>(b->size));
  return b;
}

void BlockAllocator::free(const Block* cb) {
  auto* b = const_cast<Block*>(cb);
  Pool& pool = b->small ? small_ : large_;
  b->in_use = false;
  allocated_.add(-static_cast<int64_t>(b->size));
  // Merge with free neighbours (the left one survives: a segment's first block keeps its identity).
  auto absorb = [&pool](Block* left, Block* right) {
    pool.erase(left);  // re-keyed by its new size below
    pool.erase(right);
    left->size += right->size;
    left->next = right->next;
    if (left->next) left->next->prev = left;
    delete right;
    return left;
  };
  if (b->next && !b->next->in_use) b = absorb(b, b->next);
  if (b->prev && !b->prev->in_use) b = absorb(b->prev, b);
  pool.insert(b);
}

void BlockAllocator::empty_cache() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Block* b = *it;
    if (b->in_use || b->next != nullptr) {  // a block in use, or split: the segment is busy
      ++it;
      continue;
    }
    (b->small ? small_ : large_).erase(b);
    reserved_.add(-static_cast<int64_t>(b->size));
    if (on_release_) on_release_(b->segment);
    delete b;
    it = segments_.erase(it);
  }
}

void BlockAllocator::reset_peaks() {
  allocated_.peak = allocated_.current;
  reserved_.peak = reserved_.current;
}

}  // namespace protwin::traces
