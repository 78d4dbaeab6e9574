// Chunk packing and the interleaved block layout (REFERENCE §1), against hand-derived layouts
// and brute force.
#include <catch2/catch.hpp>

#include <set>

#include "sim/policy/block_layout.h"
#include "sim/policy/chunking.h"
#include "sim/workload/parameters.h"
#include "traces/units.h"

using namespace protwin;
using namespace protwin::sim;

TEST_CASE("every parameter is packed once, in execution order, blocks contiguous") {
  const auto layout = parameter_layout(find_model("gpt2-small"));
  const auto packed = pack_chunks(layout, 128 * kMiB, 2);
  std::vector<std::string> order;
  for (const auto& c : packed.chunks)
    for (const auto& t : c.tensors) order.push_back(t.name);
  std::vector<std::string> expected;
  for (const auto& b : layout)
    for (const auto& t : b.tensors)
      if (t.tied_to.empty()) expected.push_back(t.name);
  REQUIRE(order == expected);  // tied lm_head is not packed again
  int64_t total = 0;
  for (const auto& c : packed.chunks) total += c.used_elems;
  REQUIRE(total == find_model("gpt2-small").parameter_count());
  // A chunk closes early only when the next block (or tensor) does not fit its remainder.
  for (size_t i = 0; i + 1 < packed.chunks.size(); ++i) {
    const auto& c = packed.chunks[i];
    const auto& next_first = packed.chunks[i + 1].tensors.front();
    const int64_t room = packed.chunk_elems - c.used_elems;
    if (next_first.block != c.tensors.back().block) {
      REQUIRE(layout[static_cast<size_t>(next_first.block)].count() > room);
    } else {
      REQUIRE(next_first.numel > room);
    }
  }
}

TEST_CASE("the chosen chunk size has the least waste of the grid (brute force)") {
  const auto layout = parameter_layout(find_model("gpt2-1b"));
  const int64_t chosen = choose_chunk_bytes(layout, 2);
  int64_t largest = 0;
  for (const auto& b : layout)
    for (const auto& t : b.tensors) largest = std::max(largest, t.numel * 2);
  int64_t best = -1, best_waste = 0;
  for (int64_t s : default_chunk_grid()) {
    if (s < largest) continue;
    const int64_t w = pack_chunks(layout, s, 2).waste_bytes();
    if (best < 0 || w < best_waste) {
      best = s;
      best_waste = w;
    }
  }
  REQUIRE(chosen == best);
  REQUIRE_THROWS_WITH(pack_chunks(layout, kMiB, 2),
                      Catch::Contains("parameter embed.tokens.weight (205852672 bytes) does not fit in one chunk"));
}

TEST_CASE("block layout: SWAP first and spaced, CKPT between and after, NONE last") {
  using M = ActMode;
  const M S = M::kSwap, C = M::kCheckpoint, N = M::kNone;
  REQUIRE(block_layout(10, 3, 4, 2) == std::vector<M>{S, C, S, C, S, C, C, N, N, N});
  // A spacing larger than the region allows is shrunk so all SWAP layers fit in it.
  REQUIRE(block_layout(10, 3, 4, 5) == std::vector<M>{S, C, S, C, S, C, C, N, N, N});
  REQUIRE(block_layout(6, 2, 0, 3) == std::vector<M>{S, S, N, N, N, N});
  REQUIRE(block_layout(4, 0, 2, 1) == std::vector<M>{C, C, N, N});
  REQUIRE(block_layout(3, 0, 0, 1) == std::vector<M>{N, N, N});
  REQUIRE_THROWS_WITH(block_layout(4, 3, 2, 1),
                      "knobs n_swap=3, n_checkpoint=2: n_swap + n_checkpoint must be in [0, 4] (the number of layers)");
}
