#include "runtime/memory/caching_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <new>
#include <utility>

#include "traces/error.h"

namespace protwin::rt {

// A block: part of one segment (a host allocation standing for one cudaMalloc), linked to its
// neighbours in the segment so that freed blocks merge.
struct CachingAllocator::Block {
  CachingAllocator* owner;
  char* ptr;
  size_t size;
  bool small;
  bool in_use = false;
  Block* prev = nullptr;
  Block* next = nullptr;
};

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

CachingAllocator::CachingAllocator(int64_t capacity, std::string name) : capacity_(capacity), name_(std::move(name)) {}

CachingAllocator::~CachingAllocator() {
  // Tensors outliving the allocator would be a bug of the owner; free what is cached.
  std::lock_guard<std::mutex> lock(mu_);
  for (Block* first : segments_) {
    std::free(first->ptr);
    for (Block* b = first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

size_t CachingAllocator::round_size(size_t n) {
  return n < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((n + kMinBlockSize - 1) / kMinBlockSize);
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

CachingAllocator::Block* CachingAllocator::split(Pool& pool, Block* b, size_t size) {
  const size_t rest = b->size - size;
  const bool split_it = b->small ? rest >= kMinBlockSize : rest > kSmallSize;
  if (!split_it) return b;
  auto* tail = new Block{b->owner, b->ptr + size, rest, b->small};
  tail->prev = b;
  tail->next = b->next;
  if (b->next) b->next->prev = tail;
  b->next = tail;
  b->size = size;
  pool.insert(tail);
  return b;
}

c10::DataPtr CachingAllocator::allocate(size_t n) const {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (n == 0) return {nullptr, nullptr, &free_block, cpu};  // as the CUDA allocator: no block
  auto* self = const_cast<CachingAllocator*>(this);
  const size_t size = round_size(n);
  const bool small = size <= kSmallSize;
  Pool& pool = small ? small_ : large_;
  std::lock_guard<std::mutex> lock(mu_);
  Block key{self, nullptr, size, small};
  auto it = pool.lower_bound(&key);
  Block* b = nullptr;
  if (it != pool.end()) {
    b = *it;
    pool.erase(it);
  } else {
    const size_t seg = segment_size(size);
    if (capacity_ > 0 && reserved_.current + static_cast<int64_t>(seg) > capacity_) self->release_free_segments();
    PROTWIN_CHECK(capacity_ <= 0 || reserved_.current + static_cast<int64_t>(seg) <= capacity_, name_,
                  " memory: out of memory allocating ", n, " bytes (a ", seg, "-byte segment; ", reserved_.current,
                  " bytes reserved of the ", capacity_, "-byte capacity, ", allocated_.current, " allocated)");
    char* p = static_cast<char*>(std::malloc(seg));
    if (p == nullptr) throw std::bad_alloc();
    b = new Block{self, p, seg, small};
    segments_.insert(b);
    reserved_.add(static_cast<int64_t>(seg));
  }
  b = self->split(pool, b, size);
  b->in_use = true;
  allocated_.add(static_cast<int64_t>(b->size));
  return {b->ptr, b, &free_block, cpu};
}

void CachingAllocator::free_block(void* ctx) {
  if (ctx == nullptr) return;
  auto* b = static_cast<Block*>(ctx);
  b->owner->release(b);
}

void CachingAllocator::release(Block* b) {
  std::lock_guard<std::mutex> lock(mu_);
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

void CachingAllocator::release_free_segments() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Block* b = *it;
    if (b->in_use || b->next != nullptr) {  // a block in use, or split: the segment is busy
      ++it;
      continue;
    }
    (b->small ? small_ : large_).erase(b);
    reserved_.add(-static_cast<int64_t>(b->size));
    std::free(b->ptr);
    delete b;
    it = segments_.erase(it);
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_free_segments();
}

MemoryCounter CachingAllocator::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocated_;
}

MemoryCounter CachingAllocator::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t CachingAllocator::segments() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(segments_.size());
}

void CachingAllocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  allocated_.peak = allocated_.current;
  reserved_.peak = reserved_.current;
}

// ---- CountingAllocator ----

namespace {
struct Counted {
  const CountingAllocator* owner;
  void* ptr;
  int64_t bytes;
};
}  // namespace

c10::DataPtr CountingAllocator::allocate(size_t n) const {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_.add(static_cast<int64_t>(n));
  }
  return {p, new Counted{this, p, static_cast<int64_t>(n)}, &free_block, c10::Device(c10::DeviceType::CPU)};
}

void CountingAllocator::free_block(void* ctx) {
  auto* c = static_cast<Counted*>(ctx);
  std::free(c->ptr);
  {
    std::lock_guard<std::mutex> lock(c->owner->mu_);
    c->owner->live_.add(-c->bytes);
  }
  delete c;
}

MemoryCounter CountingAllocator::counter() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

void CountingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  live_.peak = live_.current;
}

// ---- AllocateOnThread ----

namespace {

thread_local c10::Allocator* t_allocator = nullptr;

// ATen's CPU allocator, replaced once: the thread's allocator when one is set, else the original.
class Routing final : public c10::Allocator {
 public:
  explicit Routing(c10::Allocator* fallback) : fallback_(fallback) {}
  c10::DataPtr allocate(size_t n) const override {
    return t_allocator ? t_allocator->allocate(n) : fallback_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return t_allocator ? nullptr : fallback_->raw_deleter(); }

 private:
  c10::Allocator* fallback_;
};

void install_routing() {
  static Routing* routing = [] {
    auto* r = new Routing(c10::GetCPUAllocator());
    c10::SetCPUAllocator(r, /*priority=*/1);  // above the default registration
    return r;
  }();
  (void)routing;
}

}  // namespace

AllocateOnThread::AllocateOnThread(c10::Allocator* allocator) : previous_(t_allocator) {
  install_routing();
  t_allocator = allocator;
}

AllocateOnThread::~AllocateOnThread() { t_allocator = previous_; }

}  // namespace protwin::rt
