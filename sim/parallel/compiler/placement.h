// Placement of Megatron-LM's 4D-parallel process groups on a cluster of identical nodes.
//
// Megatron orders ranks "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py, RankGenerator): TP
// varies fastest, then CP, then DP, then PP, so TP and CP groups fill a node first, DP groups
// come next and pipeline stages are farthest apart. Global rank
//   r = tp_i + T (cp_i + C (dp_i + D pp_i)),   node = r / G   (G GPUs per node, nodes in order).
// For every group kind the placement reports its size, how many members share a node and how
// many nodes it spans (the worst group of that kind when groups differ), which is what the
// collective cost model needs (every collective op's group: ranks, ranks_per_node, scope).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace protwin::sim::parallel {

struct ParallelSizes {
  int64_t tp = 1, cp = 1, pp = 1, dp = 1;
  int64_t world() const { return tp * cp * pp * dp; }
};

struct GroupPlacement {
  std::string name;            // "tp", "cp", "dp", "dp_cp", "pp"
  int64_t size = 1;
  int64_t ranks_per_node = 1;  // members on one node
  int64_t nodes = 1;           // nodes the group spans
  bool inter_node() const { return nodes > 1; }
  const char* scope() const { return inter_node() ? "inter_node" : "intra_node"; }
};

struct Placement {
  ParallelSizes sizes;
  int64_t gpus_per_node = 1;
  int64_t nodes = 1;
  GroupPlacement tp, cp, dp, dp_cp, pp;  // dp_cp: DP x CP, where Megatron reduces gradients
  // Point-to-point pairs between consecutive pipeline stages: [s] is stage s -> s+1 for
  // s < PP-1, and [PP-1] is the wrap PP-1 -> 0 (interleaved schedules, tied embeddings); true
  // when any rank's pair crosses a node boundary.
  std::vector<bool> stage_link_inter_node;
};

// Places `sizes` on `nodes` nodes of `gpus_per_node` GPUs. The world must fill the nodes
// (world == nodes * G, or world <= G on one node). Groups whose members are not spread evenly
// over their nodes (ranks_per_node not dividing the group) are refused naming the flags.
Placement place_groups(const ParallelSizes& sizes, int64_t gpus_per_node, int64_t nodes);

}  // namespace protwin::sim::parallel
