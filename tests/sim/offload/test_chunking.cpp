// Chunk packing and the interleaved block layout (REFERENCE §1), against hand-derived layouts.
#include <catch2/catch.hpp>

#include <set>

#include "sim/offload/compiler/block_layout.h"
#include "sim/offload/compiler/chunking.h"
#include "sim/workload/model_spec.h"
#include "traces/units.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

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

namespace {
ParamTensor tensor(const std::string& name, int64_t numel, const std::string& tied_to = "") {
  return ParamTensor{name, {numel}, numel, tied_to};
}
// A hand-sized model: embedding 6, two layers of 4 (3 + 1), a head tied to the embedding plus a
// norm of 1. Elements; 1 byte each so bytes = elements.
std::vector<BlockParams> toy_layout() {
  return {{"embedding", {tensor("emb", 6)}},
          {"layers.0", {tensor("l0.w", 3), tensor("l0.b", 1)}},
          {"layers.1", {tensor("l1.w", 3), tensor("l1.b", 1)}},
          {"head", {tensor("norm", 1), tensor("lm_head", 6, "emb")}}};
}
}  // namespace

TEST_CASE("chunk size: the grid size with the least waste, worked by hand") {
  // 15 elements. Size 6: [emb] [l0 | 2 free] [l1 + norm | 1 free] -> waste 3. Size 8: [emb | 2]
  // [l0 l1] [norm | 7] -> 9. Size 16: [all | 1] -> 1. Size 4 cannot hold emb.
  const auto layout = toy_layout();
  CHECK(pack_chunks(layout, 6, 1).waste_bytes() == 3);
  CHECK(pack_chunks(layout, 8, 1).waste_bytes() == 9);
  CHECK(pack_chunks(layout, 16, 1).waste_bytes() == 1);
  CHECK(choose_chunk_bytes(layout, 1, {4, 6, 8, 16}) == 16);
  CHECK(choose_chunk_bytes(layout, 1, {4, 6, 8}) == 6);
  CHECK(choose_chunk_bytes(layout, 1, {6, 7}) == 6);  // size 7: [emb | 1] [l0 | 3] [l1 norm | 2] -> 6
  REQUIRE_THROWS_WITH(choose_chunk_bytes(layout, 1, {4}), Catch::Contains("holds the largest parameter (6 bytes)"));
  REQUIRE_THROWS_WITH(pack_chunks(parameter_layout(find_model("gpt2-1b")), kMiB, 2),
                      Catch::Contains("parameter embed.tokens.weight (205852672 bytes) does not fit in one chunk"));
}

TEST_CASE("per-block chunks: one chunk per block, sized to it, and a tied head uses the embedding's chunk") {
  const ChunkLayout L = pack_per_block(toy_layout(), 2);
  REQUIRE(L.chunks.size() == 4);
  const std::vector<int64_t> caps = {12, 8, 8, 2};  // bytes: 6, 4, 4, 1 elements at 2 B
  for (int c = 0; c < 4; ++c) {
    CHECK(L.capacity_bytes(c) == caps[static_cast<size_t>(c)]);
    CHECK(L.chunks[static_cast<size_t>(c)].used_elems * 2 == caps[static_cast<size_t>(c)]);
  }
  CHECK(L.chunk_bytes == 12);  // the largest
  CHECK(L.waste_bytes() == 0);
  CHECK(L.block_uses == std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 3}});
  // Nothing persistent: the head needs 2 buffers at once; with the embedding's chunk persistent, 1.
  CHECK(buffers_needed(L, 0) == 2);
  CHECK(buffers_needed(L, 1) == 1);
  CHECK(buffers_needed(L, 4) == 1);
  // Equal-size chunks of 8: [emb | 2] [l0 l1] [norm]; the head uses chunks 2 and 0.
  const ChunkLayout E = pack_chunks(toy_layout(), 8, 1);
  CHECK(E.block_uses == std::vector<std::vector<int>>{{0}, {1}, {1}, {0, 2}});
  CHECK(buffers_needed(E, 0) == 2);
  CHECK(buffers_needed(E, 1) == 1);
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
