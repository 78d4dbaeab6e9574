// CollectiveModel against closed forms computed by hand from the machine files' numbers
// (hwmodels/collective_model.h): ring inside a node, the slowest level across nodes, NCCL's
// latency steps, send_recv per level; old plans cost exactly as before.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "traces/error.h"
#include "traces/plan.h"

using namespace protwin;
using namespace protwin::hw;

namespace {
const double S = 512.0 * 1024 * 1024;  // a 512 MiB buffer (NCCL-tests convention: the full buffer)

traces::Op collective_op(const std::string& kind, double bytes, nlohmann::json attrs) {
  traces::Op op;
  op.id = 0;
  op.kind = traces::op_kind_named(kind);
  op.stream = "collective";
  op.work.bytes = static_cast<int64_t>(bytes);
  op.group = {attrs.value("ranks", 0), attrs.value("ranks_per_node", 0), 0, attrs.value("scope", "") == "inter_node"};
  return op;
}
}  // namespace

TEST_CASE("a ring all-reduce inside a node takes 2(n-1)/n S / busbw + alpha", "[hwmodels]") {
  // abci-a100: NVSwitch, all-reduce busbw 200 GB/s (NVIDIA/nccl-tests#149), alpha 15 us; the
  // model alone (the measured tables, on by default, correct it: hwmodels/kernel_table.h).
  const HardwareCostModel cm(load_machine("abci-a100", {"kernel_tables.enabled=false"}));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 8, 8).seconds ==
        Approx(15e-6 + 2.0 * 7 / 8 * S / 200e9));
  CHECK(cm.collective_time(CollectiveKind::kAllGather, S, 4, 4).seconds ==
        Approx(12e-6 + 3.0 / 4 * S / 200e9));
  // The group API and the old scope API agree inside a node.
  CHECK(cm.collective_time(CollectiveKind::kReduceScatter, S, 8, 8).seconds ==
        Approx(cm.collective_time(CollectiveKind::kReduceScatter, S, 8).seconds));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 1, 1).seconds == 0);
}

TEST_CASE("a mesh node gives a group of r GPUs (r-1)/(G-1) of its busbw", "[hwmodels]") {
  // tsubame-h100: 4 GPUs, NVLink between every pair, busbw 300 GB/s for all four.
  const HardwareCostModel cm(load_machine("tsubame-h100"));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 4, 4).seconds ==
        Approx(15e-6 + 2.0 * 3 / 4 * S / 300e9));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 2, 2).seconds ==
        Approx(15e-6 + 2.0 * 1 / 2 * S / (300e9 / 3)));
  CHECK(cm.collectives().bus_GBps(CollectiveKind::kAllGather, 3, 3) == Approx(200.0));
}

TEST_CASE("a group across nodes runs at its slowest level, with NCCL's latency steps", "[hwmodels]") {
  const HardwareCostModel abci(load_machine("abci-a100"));
  // 4 nodes x 8 GPUs: node network 4 x 200 Gb/s x 0.85 = 85 GB/s < NVSwitch 200 GB/s.
  // Latency: all-reduce takes the tree's 2 ceil(log2 4) = 4 steps (ring: 6) of 9.6 us.
  CHECK(abci.collective_time(CollectiveKind::kAllReduce, S, 32, 8).seconds ==
        Approx((15 + 4 * 9.6) * 1e-6 + 2.0 * 31 / 32 * S / 85e9));
  // DP with TP = 8: one rank per node over 16 nodes gets 1/8 of the node's NICs (10.625 GB/s);
  // reduce-scatter is a ring: 15 inter-node steps.
  CHECK(abci.collective_time(CollectiveKind::kReduceScatter, S, 16, 1).seconds ==
        Approx((12 + 15 * 9.6) * 1e-6 + 15.0 / 16 * S / (85e9 / 8)));
  // 2 ranks per node on a 4-GPU mesh: min(300/3 NVLink, 2/4 x 85 network) = 42.5 GB/s.
  const HardwareCostModel tsubame(load_machine("tsubame-h100"));
  CHECK(tsubame.collective_time(CollectiveKind::kAllGather, S, 8, 2).seconds ==
        Approx((12 + 3 * 9.6) * 1e-6 + 7.0 / 8 * S / 42.5e9));
  // hgx-h100: 8 x 400 Gb/s x 0.85 = 340 GB/s per node, above NVSwitch's 300: NVLink limits.
  const HardwareCostModel hgx(load_machine("hgx-h100"));
  CHECK(hgx.collectives().bus_GBps(CollectiveKind::kAllReduce, 64, 8) == Approx(300.0));
  CHECK(hgx.collectives().bus_GBps(CollectiveKind::kAllReduce, 64, 4) == Approx(170.0));
  // Large groups: the all-reduce latency grows with log2(nodes), the ring's with nodes.
  CHECK(abci.collectives().alpha_seconds(CollectiveKind::kAllReduce, 256 * 8, 8) ==
        Approx((15 + 2 * 8 * 9.6) * 1e-6));
  CHECK(abci.collectives().alpha_seconds(CollectiveKind::kAllGather, 256 * 8, 8) ==
        Approx((12 + 255 * 9.6) * 1e-6));
}

TEST_CASE("machines with only inter-node collectives use them as the node's network", "[hwmodels]") {
  // a100-server: /collectives/inter_node busbw 11 GB/s, alpha 30 us (100 Gb/s IB, 4 GPUs).
  const HardwareCostModel cm(load_machine("a100-server"));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 8, 4).seconds ==
        Approx(cm.collective_time(CollectiveKind::kAllReduce, S, 8, CollectiveScope::kInterNode).seconds));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 8, 2).seconds ==
        Approx(30e-6 + 2.0 * 7 / 8 * S / (11e9 / 2)));
}

TEST_CASE("send_recv crosses one GPU pair inside a node, a NIC share across nodes", "[hwmodels]") {
  const HardwareCostModel abci(load_machine("abci-a100"));
  // NVSwitch pair 237.5 GB/s (nccl-tests#149: 430-520 bidirectional), alpha 8.4 + 3.4 us.
  CHECK(abci.send_recv_time(S, false).seconds == Approx(11.8e-6 + S / 237.5e9));
  // 4 HDR NICs for 8 GPUs: 85 / 8 GB/s each; alpha 8.4 + 9.6 us (NCCL tuning model).
  CHECK(abci.send_recv_time(S, true).seconds == Approx(18e-6 + S / (85e9 / 8)));
  // One NIC per GPU: a whole NIC at 0.85 of 200 Gb/s.
  const HardwareCostModel tsubame(load_machine("tsubame-h100"));
  CHECK(tsubame.send_recv_time(S, true).seconds == Approx(18e-6 + S / 21.25e9));
  CHECK(tsubame.send_recv_time(S, false).seconds == Approx(11.8e-6 + S / 110e9));
  // Machines without a send_recv entry: a 2-rank broadcast.
  const HardwareCostModel a100(load_machine("a100-server"));
  CHECK(a100.send_recv_time(S, false).seconds == Approx(12e-6 + S / 190e9));
  CHECK(a100.send_recv_time(0, true).seconds == 0);
}

TEST_CASE("plan ops: ranks_per_node places the group, old ops cost as before", "[hwmodels]") {
  traces::Plan plan;
  plan.gpus = 4;
  const HardwareCostModel abci(load_machine("abci-a100"));
  const auto ns = [](double s) { return Approx(s * 1e9).margin(1); };
  // The 4D-parallel contract: ranks, ranks_per_node, scope.
  const OpCost dp = abci.cost(collective_op("reduce_scatter", S, {{"ranks", 16}, {"ranks_per_node", 1}, {"scope", "inter_node"}}), plan);
  CHECK(dp.stream_time().ns == ns((12 + 15 * 9.6) * 1e-6 + 15.0 / 16 * S / (85e9 / 8)));
  CHECK(dp.transfer() == nullptr);
  const OpCost tp = abci.cost(collective_op("all_gather", S, {{"ranks", 8}, {"ranks_per_node", 8}, {"scope", "intra_node"}}), plan);
  CHECK(tp.stream_time().ns == ns(12e-6 + 7.0 / 8 * S / 200e9));
  const OpCost pp = abci.cost(collective_op("send_recv", S, {{"ranks", 2}, {"ranks_per_node", 1}, {"scope", "inter_node"}}), plan);
  CHECK(pp.stream_time().ns == ns(18e-6 + S / (85e9 / 8)));
  const OpCost pp_intra = abci.cost(collective_op("send_recv", S, {{"ranks", 2}, {"scope", "intra_node"}}), plan);
  CHECK(pp_intra.stream_time().ns == ns(11.8e-6 + S / 237.5e9));
  // Old plans (ranks and scope only) on the old machines: exactly today's formulas.
  const HardwareCostModel a100(load_machine("a100-server"));
  CHECK(a100.cost(collective_op("all_reduce", S, {{"ranks", 4}}), plan).stream_time().ns == ns(15e-6 + 1.5 * S / 190e9));
  CHECK(a100.cost(collective_op("all_reduce", S, {{"ranks", 8}, {"scope", "inter_node"}}), plan).stream_time().ns ==
        ns(30e-6 + 2.0 * 7 / 8 * S / 11e9));
  CHECK(a100.cost(collective_op("all_gather", S, nlohmann::json::object()), plan).stream_time().ns == ns(12e-6 + 0.75 * S / 190e9));
  // An old inter-node op on a machine with only a /network: whole nodes when it fills them.
  CHECK(abci.cost(collective_op("all_reduce", S, {{"ranks", 16}, {"scope", "inter_node"}}), plan).stream_time().ns ==
        ns((15 + 2 * 9.6) * 1e-6 + 2.0 * 15 / 16 * S / 85e9));
  // Host-staged groups inside a node keep loading the PCIe links.
  const HardwareCostModel geforce(load_machine("rtx3090-server"));
  CHECK(geforce.cost(collective_op("all_gather", S, {{"ranks", 4}, {"ranks_per_node", 4}}), plan).transfer()->n_links() == 3);
}

TEST_CASE("bad placements name the op, the machine and what was expected", "[hwmodels][errors]") {
  traces::Plan plan;
  const HardwareCostModel abci(load_machine("abci-a100"));
  CHECK_THROWS_WITH(abci.cost(collective_op("all_reduce", S, {{"ranks", 12}, {"ranks_per_node", 8}}), plan),
                    "plan op 0 (all_reduce, stream collective) group.ranks_per_node: machine abci-a100: "
                    "a group of 12 ranks with 8 per node is not a whole number of nodes\n"
                    "hint: ranks_per_node must divide ranks");
  CHECK_THROWS_WITH(abci.collective_time(CollectiveKind::kAllReduce, S, 32, 16).seconds,
                    "machine abci-a100: 16 ranks per node, but a node has 8 GPUs (/gpu/count)");
  const HardwareCostModel h100(load_machine("h100-server"));
  CHECK_THROWS_WITH(h100.collective_time(CollectiveKind::kAllReduce, S, 16, 8).seconds,
                    "machine h100-server: a group of 16 ranks with 8 per node spans nodes, but the "
                    "machine has no /network and no /collectives/inter_node entry");
  CHECK_THROWS_WITH(h100.send_recv_time(S, true).seconds,
                    "machine h100-server: an inter-node send_recv needs a /network or "
                    "/collectives/inter_node entry");
}
