#include "hwmodels/collective_model.h"

#include <algorithm>
#include <iterator>

#include "traces/error.h"
#include "traces/kernel_kinds.h"

namespace protwin::hw {

namespace {

namespace kk = traces::kernel_kinds;
constexpr const char* kCollectiveNames[] = {kk::kAllReduce, kk::kReduceScatter, kk::kAllGather,
                                            kk::kBroadcast};  // by CollectiveKind
static_assert(std::size(kCollectiveNames) == static_cast<size_t>(CollectiveKind::kBroadcast) + 1, "a name per kind");

int ceil_log2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

// Inter-node steps of NCCL's latency model for a group over `nodes` nodes.
int inter_node_steps(CollectiveKind kind, int nodes) {
  if (nodes <= 1) return 0;
  if (kind == CollectiveKind::kAllReduce) return std::min(2 * (nodes - 1), 2 * ceil_log2(nodes));
  return nodes - 1;
}

}  // namespace

const char* collective_name(CollectiveKind kind) { return kCollectiveNames[static_cast<size_t>(kind)]; }

bool collective_from_string(const std::string& name, CollectiveKind* kind) {
  for (size_t k = 0; k < std::size(kCollectiveNames); ++k)
    if (name == kCollectiveNames[k]) {
      *kind = static_cast<CollectiveKind>(k);
      return true;
    }
  return false;
}

const CollectiveSpec& spec_of(const CollectiveDomainSpec& d, CollectiveKind kind) {
  using D = CollectiveDomainSpec;
  static constexpr CollectiveSpec D::*kSpecs[] = {&D::all_reduce, &D::reduce_scatter, &D::all_gather,
                                                  &D::broadcast};  // by CollectiveKind
  static_assert(std::size(kSpecs) == std::size(kCollectiveNames), "a domain entry per kind");
  return d.*kSpecs[static_cast<size_t>(kind)];
}

double collective_bus_bytes(CollectiveKind kind, double bytes, int ranks) {
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2 * (n - 1) / n * bytes;
    case CollectiveKind::kBroadcast: return bytes;
    default: return (n - 1) / n * bytes;
  }
}

CollectiveModel::CollectiveModel(const Machine& machine)
    : name_(machine.name),
      gpus_per_node_(machine.gpu.count),
      intra_(machine.intra_node),
      inter_(machine.inter_node),
      network_(machine.network) {}

void CollectiveModel::check_group(int ranks, int ranks_per_node) const {
  PROTWIN_CHECK(ranks >= 1 && ranks_per_node >= 1 && ranks_per_node <= ranks &&
                    ranks % ranks_per_node == 0,
                "machine ", name_, ": a group of ", ranks, " ranks with ", ranks_per_node,
                " per node is not a whole number of nodes\nhint: ranks_per_node must divide ranks");
  PROTWIN_CHECK(ranks_per_node <= gpus_per_node_, "machine ", name_, ": ", ranks_per_node,
                " ranks per node, but a node has ", gpus_per_node_, " GPUs (/gpu/count)");
  PROTWIN_CHECK(ranks_per_node == ranks || has_network(), "machine ", name_,
                ": a group of ", ranks, " ranks with ", ranks_per_node,
                " per node spans nodes, but the machine has no /network and no "
                "/collectives/inter_node entry");
}

double CollectiveModel::intra_GBps(CollectiveKind kind, int ranks_per_node) const {
  const double busbw = spec_of(intra_, kind).busbw_GBps;
  if (intra_.fabric == IntraFabric::kSwitch || ranks_per_node >= gpus_per_node_) return busbw;
  return busbw * (ranks_per_node - 1) / (gpus_per_node_ - 1);
}

double CollectiveModel::node_network_GBps(CollectiveKind kind) const {
  if (network_) return network_->node_GBps();
  return spec_of(*inter_, kind).busbw_GBps;
}

double CollectiveModel::bus_GBps(CollectiveKind kind, int ranks, int ranks_per_node, int groups_per_node) const {
  check_group(ranks, ranks_per_node);
  if (ranks_per_node == ranks) return intra_GBps(kind, ranks);
  const double network = groups_per_node > 0 ? node_network_GBps(kind) / groups_per_node
                                             : node_network_GBps(kind) * ranks_per_node / gpus_per_node_;
  if (ranks_per_node == 1) return network;
  return std::min(intra_GBps(kind, ranks_per_node), network);
}

double CollectiveModel::alpha_seconds(CollectiveKind kind, int ranks, int ranks_per_node) const {
  check_group(ranks, ranks_per_node);
  if (ranks_per_node == ranks) return spec_of(intra_, kind).alpha_us * 1e-6;
  if (!network_) return spec_of(*inter_, kind).alpha_us * 1e-6;
  const int steps = inter_node_steps(kind, ranks / ranks_per_node);
  return (spec_of(intra_, kind).alpha_us + steps * network_->hop_latency_us) * 1e-6;
}

double CollectiveModel::seconds(CollectiveKind kind, double bytes, int ranks, int ranks_per_node,
                                int groups_per_node) const {
  if (ranks <= 1 || bytes <= 0) return 0;
  return alpha_seconds(kind, ranks, ranks_per_node) +
         collective_bus_bytes(kind, bytes, ranks) / (bus_GBps(kind, ranks, ranks_per_node, groups_per_node) * 1e9);
}

double CollectiveModel::send_recv_seconds(double bytes, bool inter_node) const {
  if (bytes <= 0) return 0;
  if (!inter_node) {
    if (intra_.send_recv) return intra_.send_recv->alpha_us * 1e-6 + bytes / (intra_.send_recv->GBps * 1e9);
    return intra_.broadcast.alpha_us * 1e-6 + bytes / (intra_.broadcast.busbw_GBps * 1e9);
  }
  if (network_) {
    const double GBps = std::min(network_->nic_GBps(), network_->node_GBps() / gpus_per_node_);
    return network_->send_recv_alpha_us * 1e-6 + bytes / (GBps * 1e9);
  }
  PROTWIN_CHECK(inter_.has_value(), "machine ", name_,
                ": an inter-node send_recv needs a /network or /collectives/inter_node entry");
  return inter_->broadcast.alpha_us * 1e-6 + bytes / (inter_->broadcast.busbw_GBps / gpus_per_node_ * 1e9);
}

}  // namespace protwin::hw
