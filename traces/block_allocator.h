// The CUDA caching allocator's block arithmetic on virtual addresses, with no memory behind it:
// the one model of "what a GPU's allocator makes of a sequence of tensor allocations and frees",
// shared by the runtime (runtime/memory/caching_allocator.h backs each segment with host memory)
// and the simulator (sim/engine/allocation_replay.h replays the runtime's predicted tensors).
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
// "Allocated" counts whole blocks (a block not split keeps its rest), as torch.cuda.memory_allocated.
// Not reproduced: per-stream pools (one address space), expandable segments, the
// oversize/max_split_size options, garbage-collection thresholds.
// Not thread-safe: the owner serialises calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>

namespace protwin::traces {

// Live bytes: now and the high water since the last reset.
struct MemoryCounter {
  int64_t current = 0, peak = 0;
  void add(int64_t n) {
    current += n;
    if (current > peak) peak = current;
  }
};

class BlockAllocator {
 public:
  static constexpr size_t kMinBlockSize = 512;
  static constexpr size_t kSmallSize = size_t{1} << 20;
  static constexpr size_t kSmallBuffer = size_t{2} << 20;
  static constexpr size_t kMinLargeAlloc = size_t{10} << 20;
  static constexpr size_t kLargeBuffer = size_t{20} << 20;
  static constexpr size_t kRoundLarge = size_t{2} << 20;

  // A block of a segment; `segment` is the virtual address of its segment's start.
  struct Block {
    uint64_t addr = 0;
    uint64_t segment = 0;
    size_t size = 0;
    bool small = false;
    bool in_use = false;
    Block* prev = nullptr;
    Block* next = nullptr;
  };

  // `capacity`: reserved bytes (segments) allowed; <= 0 = unlimited. `name` for messages.
  // `on_release(segment)` is called for every segment given back (before out of memory, empty_cache).
  explicit BlockAllocator(int64_t capacity = 0, std::string name = "device",
                          std::function<void(uint64_t)> on_release = {});
  ~BlockAllocator();
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;

  // n > 0. A new segment, when one is needed, starts at a fresh virtual address (the owner backs
  // it on first sight of `segment`). Throws protwin::Error when the capacity would be exceeded.
  const Block* allocate(size_t n);
  void free(const Block* b);

  static size_t round_size(size_t n);
  static size_t segment_size(size_t rounded);

  const MemoryCounter& allocated() const { return allocated_; }  // blocks in use (whole blocks)
  const MemoryCounter& reserved() const { return reserved_; }    // segments
  int64_t segments() const { return static_cast<int64_t>(segments_.size()); }
  void reset_peaks();
  // Frees every segment with no block in use (torch.cuda.empty_cache).
  void empty_cache();

 private:
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;
  Block* split(Pool& pool, Block* b, size_t size);

  int64_t capacity_;
  std::string name_;
  std::function<void(uint64_t)> on_release_;
  uint64_t next_segment_ = 1ULL << 40;  // virtual addresses, increasing as cudaMalloc's usually do
  Pool small_, large_;                  // free blocks
  std::set<Block*> segments_;           // the first block of each segment
  MemoryCounter allocated_, reserved_;
};

}  // namespace protwin::traces
