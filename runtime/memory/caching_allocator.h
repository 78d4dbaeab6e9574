// The emulated device's memory: a c10::Allocator with the CUDA caching allocator's arithmetic, on
// host memory, counting live and reserved bytes, so the runtime measures what its tensors really
// occupy on a GPU (fragmentation included) instead of the plan's own bytes.
//
// PyTorch's c10/cuda/CUDACachingAllocator.cpp (1.13 through 2.x), whose constants this reproduces:
//   kMinBlockSize  = 512 B     every request is rounded up to a multiple of 512 B (round_size)
//   kSmallSize     = 1 MiB     requests up to this come from the small pool ...
//   kSmallBuffer   = 2 MiB     ... whose segments (cudaMalloc calls) are 2 MiB
//   kMinLargeAlloc = 10 MiB    larger requests below this get a ...
//   kLargeBuffer   = 20 MiB    ... 20 MiB segment (get_allocation_size)
//   kRoundLarge    = 2 MiB     requests of 10 MiB and more get a segment rounded up to 2 MiB
// A request takes the smallest free block of its pool that fits (best fit, lowest address on a
// tie); the rest is split off as a free block when it is at least 512 B (small pool) or more than
// 1 MiB (large pool: should_split). A freed block merges with free neighbours of its segment.
// Segments are kept for reuse (never returned), as the caching allocator does until empty_cache;
// when a new segment would exceed the capacity, the free segments are released first (as the CUDA
// allocator does before reporting out of memory), then the request fails.
// Not reproduced: per-stream pools (the emulated device has one address space), expandable
// segments, the oversize/max_split_size options, garbage-collection thresholds.
// Runtime header: includes c10's Allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <c10/core/Allocator.h>

namespace protwin::rt {

// Live bytes of an allocator: now and the high water since the last reset.
struct MemoryCounter {
  int64_t current = 0, peak = 0;
  void add(int64_t n) {
    current += n;
    if (current > peak) peak = current;
  }
};

class CachingAllocator final : public c10::Allocator {
 public:
  static constexpr size_t kMinBlockSize = 512;
  static constexpr size_t kSmallSize = size_t{1} << 20;
  static constexpr size_t kSmallBuffer = size_t{2} << 20;
  static constexpr size_t kMinLargeAlloc = size_t{10} << 20;
  static constexpr size_t kLargeBuffer = size_t{20} << 20;
  static constexpr size_t kRoundLarge = size_t{2} << 20;

  // `capacity`: reserved bytes (segments) allowed; <= 0 = unlimited. `name` for messages.
  explicit CachingAllocator(int64_t capacity = 0, std::string name = "device");
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  c10::DataPtr allocate(size_t n) const override;

  static size_t round_size(size_t n);
  static size_t segment_size(size_t rounded);

  MemoryCounter allocated() const;  // bytes of blocks in use (rounded), as torch.cuda.memory_allocated
  MemoryCounter reserved() const;   // bytes of segments, as torch.cuda.memory_reserved
  int64_t segments() const;
  void reset_peaks();
  // Frees every segment with no block in use (torch.cuda.empty_cache).
  void empty_cache();

 private:
  struct Block;
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;
  static void free_block(void* ctx);
  void release(Block* b);
  void release_free_segments();
  Block* split(Pool& pool, Block* b, size_t size);

  int64_t capacity_;
  std::string name_;
  mutable std::mutex mu_;
  mutable Pool small_, large_;  // free blocks
  mutable std::set<Block*> segments_;  // the first block of each segment
  mutable MemoryCounter allocated_, reserved_;
};

// Plain host memory (malloc), counting live bytes: the emulated device's pinned and pageable pools.
class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override;
  MemoryCounter counter() const;
  void reset_peak();

 private:
  static void free_block(void* ctx);
  mutable std::mutex mu_;
  mutable MemoryCounter live_;
};

// While alive on a thread, ATen's CPU allocations on that thread (the outputs and temporaries of the
// ops it runs) come from `allocator`: the emulated device's compute stream worker. Frees go back to
// whichever allocator made the memory, on any thread. Installs a routing CPU allocator once.
class AllocateOnThread {
 public:
  explicit AllocateOnThread(c10::Allocator* allocator);
  ~AllocateOnThread();
  AllocateOnThread(const AllocateOnThread&) = delete;
  AllocateOnThread& operator=(const AllocateOnThread&) = delete;

 private:
  c10::Allocator* previous_;
};

}  // namespace protwin::rt
