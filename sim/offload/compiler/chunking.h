// Chunk packing (ProTrain §3.1, REFERENCE §1): parameters in execution order, packed into
// equal-size chunks. A block's parameters stay contiguous: a new chunk starts when the next block
// does not fit the remainder of the current one; a block larger than a chunk continues over as
// many chunks as it needs, split at tensor boundaries. Tied parameters keep their first slot
// (parameter_layout lists them only once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/model_spec.h"

namespace protwin::sim::offload {

struct PackedTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t offset = 0;  // elements from the chunk start
  int block = 0;       // index into the layout's blocks
};

struct PackedChunk {
  int id = 0;
  int64_t used_elems = 0;
  int64_t capacity_elems = 0;  // the chunk's size (its buffer on the GPU)
  std::vector<PackedTensor> tensors;
  int first_block = 0, last_block = 0;  // blocks whose parameters are (partly) in this chunk
};

struct ChunkLayout {
  int64_t chunk_bytes = 0;  // the size of every chunk (per-block layouts: of the largest)
  int64_t chunk_elems = 0;  // chunk_bytes / bytes per element
  int bytes_per_elem = 2;   // fp16/bf16 chunks
  std::vector<PackedChunk> chunks;
  std::vector<std::vector<int>> block_chunks;  // for each block, the chunks holding its parameters
  // For each block, every chunk it needs on the GPU, ascending: its own plus, for a tied LM head,
  // the chunk holding the embedding it shares. The one rule the compiler, the analytic model and
  // the search all use.
  std::vector<std::vector<int>> block_uses;
  int64_t waste_bytes() const;                 // unused bytes summed over all chunks
  int64_t capacity_bytes(int c) const;         // chunk c's size in bytes
};

// Chunk buffers a block needs at once when chunks [0, n_persist) stay on the GPU (at least 1).
int buffers_needed(const ChunkLayout& layout, int n_persist);

// Packs `layout` into chunks of `chunk_bytes`. Fails (protwin::Error) if one tensor is larger than
// a chunk.
ChunkLayout pack_chunks(const std::vector<BlockParams>& layout, int64_t chunk_bytes, int bytes_per_elem);

// One chunk per block that has parameters, each exactly as large as the block: the gather units
// of systems that fetch per submodule (DeepSpeed stage 3) or per wrapped unit (FSDP).
ChunkLayout pack_per_block(const std::vector<BlockParams>& layout, int bytes_per_elem);

// The default grid of chunk sizes: powers of two from 1 MiB to 4 GiB.
std::vector<int64_t> default_chunk_grid();

// The chunk size of `grid` that minimises packing waste among those that hold the largest tensor;
// ties go to the smaller size (finer-grained persistence and prefetch).
int64_t choose_chunk_bytes(const std::vector<BlockParams>& layout, int bytes_per_elem,
                           const std::vector<int64_t>& grid = default_chunk_grid());

}  // namespace protwin::sim::offload
