// traces::BlockAllocator, the caching allocator's model the runtime and the simulator share, on
// its own (no memory behind it; runs in the sanitised suite). Oracle: the closed forms of
// c10/cuda/CUDACachingAllocator.cpp (round_size, get_allocation_size, should_split, best fit,
// merging), the same cases tests/runtime/test_caching_allocator.cpp checks through LibTorch.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "traces/block_allocator.h"
#include "traces/error.h"

using protwin::traces::BlockAllocator;

namespace {
constexpr size_t kMiB = size_t{1} << 20;
}

TEST_CASE("block allocator: small requests share 2 MiB segments, kept after free", "[traces][allocator]") {
  BlockAllocator a;
  std::vector<const BlockAllocator::Block*> live;
  for (int i = 0; i < 2049; ++i) live.push_back(a.allocate(1000));  // one more 1 KiB block than 2 MiB holds
  CHECK(a.allocated().current == 2049 * 1024);
  CHECK(a.segments() == 2);
  for (const auto* b : live) a.free(b);
  CHECK(a.allocated().current == 0);
  CHECK(a.allocated().peak == 2049 * 1024);
  CHECK(a.reserved().current == static_cast<int64_t>(4 * kMiB));
  a.empty_cache();  // merged back into two whole segments, both released
  CHECK(a.reserved().current == 0);
  CHECK(a.segments() == 0);
}

TEST_CASE("block allocator: best fit, unsplit rests and a second segment", "[traces][allocator]") {
  BlockAllocator one;
  const auto* x = one.allocate(19 * kMiB + kMiB / 2);  // the 0.5 MiB rest is not split off
  CHECK(one.allocated().current == static_cast<int64_t>(20 * kMiB));
  one.free(x);

  BlockAllocator c;
  const auto *a = c.allocate(4 * kMiB), *b = c.allocate(4 * kMiB), *d0 = c.allocate(4 * kMiB);
  CHECK(b->addr == a->addr + 4 * kMiB);
  const uint64_t hole = b->addr;
  c.free(b);
  const auto* d = c.allocate(6 * kMiB);  // the 8 MiB tail, not the 4 MiB hole
  CHECK(d->addr == a->addr + 12 * kMiB);
  const auto* e = c.allocate(4 * kMiB);  // best fit: the hole
  CHECK(e->addr == hole);
  const auto* f = c.allocate(3 * kMiB);  // 2 MiB left in the first segment: a second one
  CHECK(c.segments() == 2);
  CHECK(f->segment != a->segment);
  CHECK(c.allocated().current == static_cast<int64_t>(21 * kMiB));
  CHECK(c.reserved().current == static_cast<int64_t>(40 * kMiB));
  for (const auto* p : {a, d0, d, e, f}) c.free(p);
  CHECK(c.allocated().current == 0);
}

TEST_CASE("block allocator: over capacity, free segments go first, then a clear error", "[traces][allocator]") {
  std::vector<uint64_t> released;
  BlockAllocator a(static_cast<int64_t>(24 * kMiB), "device", [&](uint64_t s) { released.push_back(s); });
  const auto* x = a.allocate(kMiB);  // a 2 MiB small segment
  a.free(x);
  const auto* big = a.allocate(22 * kMiB);  // 22 MiB + 2 MiB cached = 24: fits without releasing
  CHECK(released.empty());
  const auto* small = a.allocate(512);  // reuses the cached small segment
  CHECK(a.segments() == 2);
  a.free(small);
  // 2 MiB needs a 20 MiB segment: the free small segment is released first, and still no room.
  try {
    a.allocate(2 * kMiB);
    FAIL("expected out of memory");
  } catch (const protwin::Error& e) {
    CHECK(std::string(e.what()) ==
          "device memory: out of memory allocating 2097152 bytes (a 20971520-byte segment; 23068672 bytes reserved "
          "of the 25165824-byte capacity, 23068672 allocated)");
  }
  CHECK(released.size() == 1);
  a.free(big);
}
