// The emulated device's memory: a c10::Allocator with the CUDA caching allocator's arithmetic, on
// host memory, counting live and reserved bytes, so the runtime measures what its tensors really
// occupy on a GPU (fragmentation included) instead of the plan's own bytes.
//
// The block arithmetic (rounding, pools, segments, best fit, split and merge; PyTorch's
// c10/cuda/CUDACachingAllocator.cpp) is traces::BlockAllocator (traces/block_allocator.h), the
// same model the simulator replays its predicted tensors through; this class backs each of its
// segments with one host allocation (standing for one cudaMalloc).
// Runtime header: includes c10's Allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <c10/core/Allocator.h>

#include "traces/block_allocator.h"

namespace protwin::rt {

using traces::MemoryCounter;

class CachingAllocator final : public c10::Allocator {
 public:
  using Model = traces::BlockAllocator;
  static constexpr size_t kMinBlockSize = Model::kMinBlockSize;
  static constexpr size_t kSmallSize = Model::kSmallSize;
  static constexpr size_t kSmallBuffer = Model::kSmallBuffer;
  static constexpr size_t kMinLargeAlloc = Model::kMinLargeAlloc;
  static constexpr size_t kLargeBuffer = Model::kLargeBuffer;
  static constexpr size_t kRoundLarge = Model::kRoundLarge;

  // `capacity`: reserved bytes (segments) allowed; <= 0 = unlimited. `name` for messages.
  explicit CachingAllocator(int64_t capacity = 0, std::string name = "device");
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  c10::DataPtr allocate(size_t n) const override;

  static size_t round_size(size_t n) { return Model::round_size(n); }
  static size_t segment_size(size_t rounded) { return Model::segment_size(rounded); }

  MemoryCounter allocated() const;  // bytes of blocks in use (rounded), as torch.cuda.memory_allocated
  MemoryCounter reserved() const;   // bytes of segments, as torch.cuda.memory_reserved
  int64_t segments() const;
  void reset_peaks();
  // Frees every segment with no block in use (torch.cuda.empty_cache).
  void empty_cache();

 private:
  struct Handle;
  static void free_block(void* ctx);

  mutable std::mutex mu_;
  mutable std::unordered_map<uint64_t, char*> memory_;  // segment (virtual address) -> host memory
  mutable Model model_;
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
