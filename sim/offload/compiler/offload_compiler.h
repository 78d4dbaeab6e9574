// The plan compiler for offloaded data-parallel training (ProTrain and the baselines): turns a
// Workload, the machine's memory limits and a knob setting into the Plan of one iteration
// (DESIGN §3, REFERENCE §1–2).
//
// Multi-GPU: one rank is simulated; the others are symmetric, so collectives are ops of that
// rank on the `collective` stream whose cost is the whole collective's time (all-gather and
// reduce-scatter of a chunk over `gpus` ranks). Host memory pools are per rank (host / ranks on
// its node).
//
// Multi-node (`nodes` > 1, gpus / nodes ranks on each node): the chunks are sharded over all
// ranks, and every collective runs over the whole data-parallel group, flat, as each system
// issues it (ProTrain: ZeRO-3-style sharding over all ranks; DeepSpeed ZeRO-3, FSDP FULL_SHARD and
// Colossal-AI Gemini: one all-gather / reduce-scatter over the whole DP process group, see
// systems.cpp). NCCL runs such a group as one ring through each node's GPUs and then its NICs;
// the collective ops carry group.ranks_per_node so the cost model prices that ring per level
// (hwmodels/collective_model.h). Each node's host memory, cores and PCIe links serve its own ranks
// only (plan meta.nodes; meta.gpus / meta.nodes ranks share a host).
//
// The iteration, in stream order:
//  forward   for each block: fetch its non-persistent chunks (h2d of this rank's shard into a free
//            buffer, then all-gather), compute forward, and for SWAP layers offload the saved
//            activations (d2h). A fetch waits for the buffer of the fetch n_buffer earlier.
//  backward  blocks in reverse: chunks still in a buffer after forward are reused (buffer_reuse),
//            others fetched again; SWAP layers' activations come back (h2d) while the layer
//            above runs; CKPT layers recompute their forward first. When a chunk's last block is
//            done, its gradient is reduce-scattered and offloaded (d2h into the pinned shard),
//            which frees its buffer, and CPU Adam updates its shard (cpu_optim) — during the rest
//            of backward (cpu_adam_overlap) or after it. Persistent chunks: Adam on the GPU at
//            the end of backward.
// The iteration ends when the last CPU Adam is done, since the next forward needs every updated
// chunk (the conservative reading of ProTrain's T_fwd + max(T_bwd + T_gpu_optim, T_cpu_optim)).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/offload/compiler/chunking.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/workload/workload.h"
#include "traces/plan.h"

namespace protwin::sim::offload {

// Memory available to one rank.
struct RankMemory {
  int64_t gpu_bytes = 0;
  int64_t pinned_bytes = 0;    // each host pool may use up to the rank's share of host memory,
  int64_t pageable_bytes = 0;  // but together they may not exceed host_bytes
  int64_t host_bytes = 0;
};

struct CompiledPlan {
  traces::Plan plan;
  std::shared_ptr<const ChunkLayout> chunks = std::make_shared<const ChunkLayout>();  // shared by the search's plans
  std::vector<ActMode> layer_modes;  // per decoder layer
};

// DeepSpeed's CPU passes around CPU Adam (knob step_host_passes, ops of kind host_pass), bytes
// moved per parameter: the overflow scan (isinf and isnan over the fp16 grad: 2 B read, a 1 B mask
// written and read, twice); per sub-group, the unscale before Adam (fp32 grad read and written)
// and the fp16 copy of the updated master after it (4 B read, 2 B written).
constexpr int64_t kStepScanBytesPerParam = 8;
constexpr int64_t kStepUnscaleBytesPerParam = 8;
constexpr int64_t kStepCopyBytesPerParam = 6;

// Bytes of optimizer state per parameter: Adam m and v (fp32), plus an fp32 master copy when the
// compute dtype is fp16/bf16.
int64_t optimizer_bytes_per_param(const std::string& dtype);

// The chunk layout a knob setting implies (chunk size chosen by waste when chunk_bytes is 0).
ChunkLayout layout_for(const Workload& w, const OffloadKnobs& k);

// Checks knob ranges against the workload (protwin::Error naming the knob and its valid range).
void check_knobs(const Workload& w, const ChunkLayout& layout, const OffloadKnobs& k, int gpus);

// `nodes`: the nodes the `gpus` ranks are spread over evenly (1: one node); `layout`: layout_for(w, k)
// when the caller has it already (the search packs once), else packed here.
CompiledPlan compile_offload_plan(const Workload& w, int gpus, const RankMemory& mem, const OffloadKnobs& k,
                                  const nlohmann::json& meta = {}, int nodes = 1,
                                  std::shared_ptr<const ChunkLayout> layout = nullptr);

}  // namespace protwin::sim::offload
