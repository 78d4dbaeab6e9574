// CollectiveModel: NCCL collectives and point-to-point copies on a cluster of nodes, alpha-beta
// per level (NVLink/NVSwitch inside a node, InfiniBand across nodes).
//
// A group of n ranks with r of them on each node (n/r nodes):
// - r == n (one node): alpha + f S / busbw_intra, f = (n-1)/n for all-gather and reduce-scatter,
//   2(n-1)/n for all-reduce, 1 for broadcast (NCCL-tests busbw, S the full buffer). On a mesh
//   fabric a group of r < G GPUs gets (r-1)/(G-1) of busbw_intra (only the links to its peers).
// - r < n (spans nodes): NCCL's ring, which crosses every node boundary once per ring; each node
//   has r of the group's GPUs and, when all G/r groups on a node communicate at once (Megatron's
//   DP and CP groups do), r/G of the node's NIC bandwidth. The ring is pipelined, so the slowest
//   level sets the rate:  busbw = min(busbw_intra(r) [r > 1], r/G x node network GB/s).
//   A group that is alone on its nodes (offloaded data parallelism: one DP group, the other
//   G - r GPUs idle) passes groups_per_node = 1 and gets the node's whole NIC rate, min(busbw_intra(r),
//   node network GB/s); groups_per_node 0 means G/r groups (the default above).
//   With r == G this is the aggregate NIC rate of a node: NVIDIA/nccl-tests#119 measured 84.8 GB/s
//   busbw for 3 nodes x 8 A100 with 4 x HDR (theory 100), hardware.md §2.2. We chose the ring
//   over the 2-level decomposition (reduce-scatter intra, all-reduce inter, all-gather intra)
//   because NCCL runs the ring for large messages and pipelines its levels, where the 2-level form
//   would add them; for bandwidth-bound sizes the two differ by a few percent.
//   Latency follows NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc): the intra-node alpha
//   (NCCL's base latency plus the intra-node steps) + inter-node steps x hop latency, with
//   N-1 steps for all-gather, reduce-scatter and broadcast (ring) and, for all-reduce, the
//   smaller of the ring's 2(N-1) and the tree's 2 ceil(log2 N) (NCCL picks the tree for
//   latency-bound all-reduces; the bandwidth term stays the ring's).
// - Machines without a "network" section but with /collectives/inter_node use its busbw as the
//   node's network rate (what a flat all-GPU ring across nodes measured) and its alpha as the
//   whole latency.
// - send_recv: alpha + bytes / bw, bw = one GPU pair's NVLink/NVSwitch rate inside a node; across
//   nodes each GPU's share of its node's NICs, at most one NIC (all G GPUs send at once in a
//   pipeline-parallel step).
#pragma once

#include <optional>
#include <string>

#include "hwmodels/machine.h"

namespace protwin::hw {

enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather, kBroadcast };

// kAllGather -> "all_gather", ...; and back (false if the name is not a collective).
const char* collective_name(CollectiveKind kind);
bool collective_from_string(const std::string& name, CollectiveKind* kind);
// The domain's alpha and busbw of one kind.
const CollectiveSpec& spec_of(const CollectiveDomainSpec& d, CollectiveKind kind);

// Bytes each rank moves per direction for a collective over `ranks` ranks of a buffer of `bytes`,
// in NCCL-tests busbw terms: 2(n-1)/n S for all-reduce, (n-1)/n S for all-gather and
// reduce-scatter, S for broadcast.
double collective_bus_bytes(CollectiveKind kind, double bytes, int ranks);

class CollectiveModel {
 public:
  explicit CollectiveModel(const Machine& machine);

  // Seconds of one collective of a `bytes` buffer over `ranks` ranks, `ranks_per_node` of them
  // on each node (1 <= ranks_per_node <= GPUs per node, ranks a multiple of it), with
  // `groups_per_node` groups sharing each node's NICs (0: GPUs per node / ranks_per_node).
  double seconds(CollectiveKind kind, double bytes, int ranks, int ranks_per_node, int groups_per_node = 0) const;
  // The busbw (GB/s) and latency (seconds) the group gets; seconds() = alpha + bus bytes / busbw.
  double bus_GBps(CollectiveKind kind, int ranks, int ranks_per_node, int groups_per_node = 0) const;
  double alpha_seconds(CollectiveKind kind, int ranks, int ranks_per_node) const;
  // One point-to-point message of `bytes` between two GPUs of one node or of two nodes.
  double send_recv_seconds(double bytes, bool inter_node) const;

  // True when the machine can cost groups that span nodes ("network" or inter_node collectives).
  bool has_network() const { return network_.has_value() || inter_.has_value(); }

 private:
  void check_group(int ranks, int ranks_per_node) const;
  double intra_GBps(CollectiveKind kind, int ranks_per_node) const;
  double node_network_GBps(CollectiveKind kind) const;

  std::string name_;
  int gpus_per_node_ = 1;
  CollectiveDomainSpec intra_;
  std::optional<CollectiveDomainSpec> inter_;
  std::optional<NetworkSpec> network_;
};

}  // namespace protwin::hw
