#include "runtime/memory/caching_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <new>
#include <utility>

#include "traces/error.h"

namespace protwin::rt {

// What a DataPtr's context points to: the allocator and the model's block.
struct CachingAllocator::Handle {
  const CachingAllocator* owner;
  const Model::Block* block;
};

CachingAllocator::CachingAllocator(int64_t capacity, std::string name)
    : model_(capacity, std::move(name), [this](uint64_t segment) {
        std::free(memory_.at(segment));
        memory_.erase(segment);
      }) {}

CachingAllocator::~CachingAllocator() {
  // Tensors outliving the allocator would be a bug of the owner; free what is cached.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [segment, p] : memory_) std::free(p);
}

c10::DataPtr CachingAllocator::allocate(size_t n) const {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (n == 0) return {nullptr, nullptr, &free_block, cpu};  // as the CUDA allocator: no block
  std::lock_guard<std::mutex> lock(mu_);
  const Model::Block* b = model_.allocate(n);
  auto it = memory_.find(b->segment);
  if (it == memory_.end()) {  // a new segment: back it with host memory
    char* p = static_cast<char*>(std::malloc(segment_size(round_size(n))));
    if (p == nullptr) throw std::bad_alloc();
    it = memory_.emplace(b->segment, p).first;
  }
  char* ptr = it->second + (b->addr - b->segment);
  return {ptr, new Handle{this, b}, &free_block, cpu};
}

void CachingAllocator::free_block(void* ctx) {
  if (ctx == nullptr) return;
  auto* h = static_cast<Handle*>(ctx);
  {
    std::lock_guard<std::mutex> lock(h->owner->mu_);
    h->owner->model_.free(h->block);
  }
  delete h;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  model_.empty_cache();
}

MemoryCounter CachingAllocator::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_.allocated();
}

MemoryCounter CachingAllocator::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_.reserved();
}

int64_t CachingAllocator::segments() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_.segments();
}

void CachingAllocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  model_.reset_peaks();
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
