// The emulated device's allocator against the CUDA caching allocator's closed forms
// (c10/cuda/CUDACachingAllocator.cpp: round_size, get_allocation_size, should_split, best fit,
// block merging, release of cached segments before out-of-memory).
#include <thread>
#include <vector>

#include "runtime/memory/caching_allocator.h"
#include "tests/runtime/torch_catch.h"
#include "traces/error.h"

using protwin::rt::AllocateOnThread;
using protwin::rt::CachingAllocator;
using protwin::rt::CountingAllocator;

namespace {
constexpr size_t kMiB = size_t{1} << 20;
}

TEST_CASE("caching allocator: 512-byte rounding and segment sizes", "[runtime][allocator]") {
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(1000000) == 1000448);  // 1954 x 512
  CHECK(CachingAllocator::segment_size(512) == 2 * kMiB);
  CHECK(CachingAllocator::segment_size(kMiB) == 2 * kMiB);              // small pool
  CHECK(CachingAllocator::segment_size(kMiB + 512) == 20 * kMiB);       // large, below 10 MiB
  CHECK(CachingAllocator::segment_size(10 * kMiB - 512) == 20 * kMiB);
  CHECK(CachingAllocator::segment_size(10 * kMiB) == 10 * kMiB);        // rounded up to 2 MiB
  CHECK(CachingAllocator::segment_size(10 * kMiB + 512) == 12 * kMiB);
}

TEST_CASE("caching allocator: small requests share 2 MiB segments", "[runtime][allocator]") {
  CachingAllocator a;
  std::vector<c10::DataPtr> live;
  const int n = 2049;  // 2049 x 1 KiB: one more than a 2 MiB segment holds
  for (int i = 0; i < n; ++i) live.push_back(a.allocate(1000));
  CHECK(a.allocated().current == n * 1024);
  CHECK(a.segments() == 2);
  CHECK(a.reserved().current == static_cast<int64_t>(4 * kMiB));
  live.clear();
  CHECK(a.allocated().current == 0);
  CHECK(a.allocated().peak == n * 1024);
  CHECK(a.reserved().current == static_cast<int64_t>(4 * kMiB));  // cached, not returned
  a.empty_cache();
  CHECK(a.reserved().current == 0);
}

TEST_CASE("caching allocator: large blocks split, reuse and fragment as on a GPU", "[runtime][allocator]") {
  CachingAllocator a;
  {
    c10::DataPtr x = a.allocate(3 * kMiB);
    void* first = x.get();
    x.clear();
    c10::DataPtr y = a.allocate(3 * kMiB);
    CHECK(y.get() == first);  // the freed block is reused, no new segment
    CHECK(a.segments() == 1);
  }
  {
    // 19.5 MiB in a 20 MiB segment: the 0.5 MiB rest is not split off (large pool: > 1 MiB only),
    // so the whole segment counts as allocated.
    CachingAllocator b;
    c10::DataPtr x = b.allocate(19 * kMiB + kMiB / 2);
    CHECK(b.allocated().current == static_cast<int64_t>(20 * kMiB));
  }
  // One 20 MiB segment: A, B, C of 4 MiB; free B (a 4 MiB hole); 6 MiB goes to the 8 MiB tail
  // (leaving 2 MiB), 4 MiB fills the hole (best fit), 3 MiB fits nowhere: a second segment.
  CachingAllocator c;
  c10::DataPtr A = c.allocate(4 * kMiB), B = c.allocate(4 * kMiB), C = c.allocate(4 * kMiB);
  char* hole = static_cast<char*>(B.get());
  CHECK(hole == static_cast<char*>(A.get()) + 4 * kMiB);
  B.clear();
  c10::DataPtr D = c.allocate(6 * kMiB);
  CHECK(static_cast<char*>(D.get()) == static_cast<char*>(A.get()) + 12 * kMiB);
  c10::DataPtr E = c.allocate(4 * kMiB);
  CHECK(static_cast<char*>(E.get()) == hole);
  CHECK(c.segments() == 1);
  c10::DataPtr F = c.allocate(3 * kMiB);
  CHECK(c.segments() == 2);
  CHECK(c.allocated().current == static_cast<int64_t>(21 * kMiB));
  CHECK(c.reserved().current == static_cast<int64_t>(40 * kMiB));
  // Freed neighbours merge: the first segment becomes one free 20 MiB block again.
  A.clear();
  C.clear();
  D.clear();
  E.clear();
  c10::DataPtr G = c.allocate(20 * kMiB);
  CHECK(c.segments() == 2);
}

TEST_CASE("caching allocator: capacity frees cached segments, then refuses naming the sizes", "[runtime][allocator]") {
  CachingAllocator a(40 * static_cast<int64_t>(kMiB), "gpu");
  c10::DataPtr x = a.allocate(3 * kMiB);  // 20 MiB segment
  x.clear();
  c10::DataPtr y = a.allocate(30 * kMiB);  // 30 MiB segment: 50 > 40, the cached 20 MiB one is freed first
  CHECK(a.reserved().current == static_cast<int64_t>(30 * kMiB));
  CHECK(a.reserved().peak == static_cast<int64_t>(30 * kMiB));
  try {
    c10::DataPtr z = a.allocate(12 * kMiB);
    FAIL("expected out of memory");
  } catch (const protwin::Error& e) {
    CHECK(std::string(e.what()) ==
          "gpu memory: out of memory allocating 12582912 bytes (a 12582912-byte segment; 31457280 bytes reserved "
          "of the 41943040-byte capacity, 31457280 allocated)");
  }
}

TEST_CASE("caching allocator: ATen tensors of a thread come from it, freed from any thread", "[runtime][allocator]") {
  CachingAllocator dev;
  CountingAllocator host;
  at::Tensor outside = at::empty({1000}, at::kFloat);
  CHECK(dev.allocated().current == 0);
  at::Tensor t;
  {
    AllocateOnThread on(&dev);
    const at::Tensor a = at::ones({1000}, at::kFloat);
    t = a.mul(a);  // two 4000-byte tensors, 4096 bytes each
    CHECK(dev.allocated().peak == 8192);
  }
  CHECK(dev.allocated().current == 4096);
  at::Tensor u = at::empty({10}, at::kFloat);
  CHECK(dev.allocated().current == 4096);
  std::thread([&] { t = at::Tensor(); }).join();
  CHECK(dev.allocated().current == 0);
  {
    c10::DataPtr p = host.allocate(12345);
    CHECK(host.counter().current == 12345);
  }
  CHECK(host.counter().current == 0);
  CHECK(host.counter().peak == 12345);
}
