#include "sim/offload/compiler/chunking.h"

#include <algorithm>

#include "traces/error.h"
#include "traces/units.h"

namespace protwin::sim::offload {

int64_t ChunkLayout::waste_bytes() const {
  int64_t w = 0;
  for (const auto& c : chunks) w += (c.capacity_elems - c.used_elems) * bytes_per_elem;
  return w;
}

int64_t ChunkLayout::capacity_bytes(int c) const {
  return chunks.at(static_cast<size_t>(c)).capacity_elems * bytes_per_elem;
}

namespace {
// Starts a chunk of `capacity` elements at `block`.
void open_chunk(ChunkLayout& out, int block, int64_t capacity) {
  PackedChunk c;
  c.id = static_cast<int>(out.chunks.size());
  c.capacity_elems = capacity;
  c.first_block = c.last_block = block;
  out.chunks.push_back(std::move(c));
}

// Appends tensor `t` of `block` to the last chunk.
void place(ChunkLayout& out, const ParamTensor& t, int block) {
  PackedChunk& c = out.chunks.back();
  c.tensors.push_back({t.name, t.shape, t.numel, c.used_elems, block});
  c.used_elems += t.numel;
  c.last_block = block;
  auto& bc = out.block_chunks[static_cast<size_t>(block)];
  if (bc.empty() || bc.back() != c.id) bc.push_back(c.id);
}

// Fills block_uses: own chunks, plus the chunk of any tensor a block's tied parameter refers to.
void set_block_uses(ChunkLayout& out, const std::vector<BlockParams>& layout) {
  out.block_uses = out.block_chunks;
  for (size_t b = 0; b < layout.size(); ++b) {
    auto& u = out.block_uses[b];
    for (const auto& t : layout[b].tensors) {
      if (t.tied_to.empty()) continue;
      for (const auto& ch : out.chunks)
        for (const auto& pt : ch.tensors)
          if (pt.name == t.tied_to && std::find(u.begin(), u.end(), ch.id) == u.end()) u.push_back(ch.id);
    }
    std::sort(u.begin(), u.end());
  }
}
}  // namespace

int buffers_needed(const ChunkLayout& layout, int n_persist) {
  int most = 1;
  for (const auto& u : layout.block_uses)
    most = std::max(most, static_cast<int>(std::count_if(u.begin(), u.end(), [&](int c) { return c >= n_persist; })));
  return most;
}

ChunkLayout pack_chunks(const std::vector<BlockParams>& layout, int64_t chunk_bytes, int bytes_per_elem) {
  PROTWIN_CHECK(bytes_per_elem > 0 && chunk_bytes >= bytes_per_elem, "chunk_bytes: expected at least ",
                bytes_per_elem, " bytes, got ", chunk_bytes);
  ChunkLayout out;
  out.chunk_bytes = chunk_bytes;
  out.bytes_per_elem = bytes_per_elem;
  out.chunk_elems = chunk_bytes / bytes_per_elem;
  out.block_chunks.resize(layout.size());
  for (size_t b = 0; b < layout.size(); ++b) {
    const int block = static_cast<int>(b);
    const int64_t need = layout[b].count();
    if (need == 0) continue;
    // A block that does not fit the remainder starts a new chunk (if the current one is in use).
    if (out.chunks.empty() || (out.chunks.back().used_elems > 0 &&
                               out.chunks.back().used_elems + need > out.chunk_elems))
      open_chunk(out, block, out.chunk_elems);
    for (const auto& t : layout[b].tensors) {
      if (!t.tied_to.empty()) continue;  // shares the storage of an earlier tensor
      PROTWIN_CHECK(t.numel <= out.chunk_elems, "chunk_bytes ", chunk_bytes, ": parameter ", t.name, " (",
                    t.numel * bytes_per_elem, " bytes) does not fit in one chunk");
      if (out.chunks.back().used_elems + t.numel > out.chunk_elems) open_chunk(out, block, out.chunk_elems);
      place(out, t, block);
    }
  }
  set_block_uses(out, layout);
  return out;
}

ChunkLayout pack_per_block(const std::vector<BlockParams>& layout, int bytes_per_elem) {
  PROTWIN_CHECK(bytes_per_elem > 0, "chunk layout: bytes per element must be positive, got ", bytes_per_elem);
  ChunkLayout out;
  out.bytes_per_elem = bytes_per_elem;
  out.block_chunks.resize(layout.size());
  for (size_t b = 0; b < layout.size(); ++b) {
    const int64_t need = layout[b].count();
    if (need == 0) continue;
    open_chunk(out, static_cast<int>(b), need);
    for (const auto& t : layout[b].tensors)
      if (t.tied_to.empty()) place(out, t, static_cast<int>(b));  // tied tensors share an earlier slot
    out.chunk_elems = std::max(out.chunk_elems, need);
  }
  out.chunk_bytes = out.chunk_elems * bytes_per_elem;
  set_block_uses(out, layout);
  return out;
}

std::vector<int64_t> default_chunk_grid() {
  std::vector<int64_t> grid;
  for (int64_t s = kMiB; s <= 4 * kGiB; s *= 2) grid.push_back(s);
  return grid;
}

int64_t choose_chunk_bytes(const std::vector<BlockParams>& layout, int bytes_per_elem,
                           const std::vector<int64_t>& grid) {
  int64_t largest = 0;
  for (const auto& b : layout)
    for (const auto& t : b.tensors)
      if (t.tied_to.empty()) largest = std::max(largest, t.numel * bytes_per_elem);
  int64_t best = -1, best_waste = 0;
  for (int64_t size : grid) {
    if (size < largest) continue;
    const int64_t waste = pack_chunks(layout, size, bytes_per_elem).waste_bytes();
    if (best < 0 || waste < best_waste) {
      best = size;
      best_waste = waste;
    }
  }
  PROTWIN_CHECK(best > 0, "chunk_bytes: no chunk size in the grid holds the largest parameter (", largest,
                " bytes)");
  return best;
}

}  // namespace protwin::sim::offload
