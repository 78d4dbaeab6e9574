// Test helper (issue 23), run by CTest as `mpirun -np 2 protwin_rt_export_flat_ranks`: a chunk
// store on every rank whose chunks are one parameter each, of a GPT-2 of hidden size 1, so some
// chunks hold a single element (fewer than the ranks: rank 0's shard is the whole chunk, rank 1's
// is empty). Every state is imported from the same flat vector on every rank and exported again
// (export_flat gathers the host-owned shards); the export must equal the import on every rank.
// Before the fix a rank whose shard was the whole chunk skipped the gather its peers made, so the
// ranks' collectives no longer matched (a hang, an MPI error or wrong values). Exit 0: equal.
#include <algorithm>
#include <cstdio>

#include <ATen/ATen.h>

#include "runtime/comm/rank_group.h"
#include "runtime/memory/chunk_store.h"
#include "runtime/model/runtime_model.h"
#include "traces/error.h"

int main() {
  using namespace protwin::rt;
  try {
    RankGroup& ranks = RankGroup::world();
    const ModelSpec cfg = protwin::traces::model_from_json(
        {{"family", "gpt2"}, {"hidden", 1}, {"layers", 1}, {"heads", 1}, {"ffn_hidden", 3}, {"vocab", 5},
         {"max_positions", 1}},
        "export_flat_ranks");
    ChunkLayout layout;
    int64_t total = 0;
    for (const ParamTensor& p : stored_parameters(cfg)) {
      const int c = static_cast<int>(layout.chunk_numel.size());
      layout.slots.push_back({c, 0, p.numel});
      layout.chunk_numel.push_back(p.numel);
      total += p.numel;
    }
    const size_t n = layout.chunk_numel.size();
    // Host-owned (ZeRO-3 shards) except the last chunk: persistent with a device-sharded Adam.
    layout.device_resident.assign(n, false);
    layout.device_optimizer.assign(n, false);
    layout.device_sharded.assign(n, false);
    layout.device_resident.back() = layout.device_optimizer.back() = layout.device_sharded.back() = true;
    EmulatedDevice device(0, 1);
    ChunkStore store(cfg, layout, device, ranks);
    int bad = 0;
    for (const StateKind kind : {StateKind::kParams, StateKind::kExpAvg, StateKind::kExpAvgSq}) {
      const at::Tensor flat = at::arange(total, at::kFloat).add_(static_cast<double>(kind) * 1000);
      store.import_flat(kind, flat);
      const at::Tensor back = store.export_flat(kind);
      if (!back.equal(flat)) ++bad;
    }
    std::printf("rank %d of %d: %zu chunks (%d of one element), %lld values per state, %d state(s) differ\n",
                ranks.rank(), ranks.size(), n,
                static_cast<int>(std::count(layout.chunk_numel.begin(), layout.chunk_numel.end(), int64_t{1})),
                static_cast<long long>(total), bad);
    return bad == 0 && ranks.size() == 2 ? 0 : 1;
  } catch (const protwin::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
