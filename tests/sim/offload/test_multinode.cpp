// Offloaded data parallelism across nodes (ProTrain's 4 x 4 A100 study): where the ranks go, what
// each node's host holds, and how the chunk collectives are priced. Oracles: the machine file's
// own numbers in closed form (NCCL ring busbw and alpha, host memory over the ranks of a node,
// CPU Adam over the ranks sharing a host), and the bytes each rank moves (1/N of a chunk).
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/analytic_model.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"
#include "sim/workload/workload.h"
#include "traces/error.h"
#include "traces/units.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

namespace {
Workload small_workload() {
  WorkloadOptions o;
  o.batch = 2;
  o.flash_attention = false;
  return build_workload(find_model("gpt2-small"), o);
}
}  // namespace

TEST_CASE("ranks are placed on whole nodes, and bad --gpus/--nodes combinations name the flag") {
  const hw::HardwareCostModel a100(hw::load_machine("a100-server"));
  CHECK(place_ranks(a100, 16, 0) == std::pair<int, int>{16, 4});
  CHECK(place_ranks(a100, 0, 2) == std::pair<int, int>{8, 2});
  CHECK(place_ranks(a100, 4, 2) == std::pair<int, int>{4, 2});
  CHECK(place_ranks(a100, 3, 0) == std::pair<int, int>{3, 1});
  CHECK(place_ranks(a100, 0, 0) == std::pair<int, int>{4, 1});
  CHECK_THROWS_WITH(place_ranks(a100, 6, 0), Catch::StartsWith("--gpus: 6 GPUs requested but a100-server has 4 per node"));
  CHECK_THROWS_WITH(place_ranks(a100, 16, 3), "--gpus: 16 GPUs do not spread evenly over --nodes 3");
  CHECK_THROWS_WITH(place_ranks(a100, 20, 4), "--gpus: 20 GPUs requested but a100-server has 4 per node (--nodes 4)");
  CHECK_THROWS_WITH(place_ranks(a100, 16, -1), Catch::StartsWith("--nodes: expected a number >= 1"));
  const hw::HardwareCostModel rtx(hw::load_machine("rtx3090-server"));
  CHECK_THROWS_WITH(place_ranks(rtx, 4, 2), Catch::StartsWith("--nodes: 2 nodes of rtx3090-server, but the machine has no inter-node network"));
  CHECK_THROWS_WITH(place_ranks(rtx, 8, 0), Catch::StartsWith("--gpus: 8 GPUs requested but rtx3090-server has 4"));
  // The search itself refuses ranks that do not fit the nodes it is given.
  SearchOptions o;
  o.gpus = 16;
  CHECK_THROWS_WITH(search_policy(find_model("gpt2-small"), a100, o),
                    Catch::StartsWith("--gpus: 16 GPUs requested but a100-server has 4\nhint: --nodes"));
}

TEST_CASE("a node's host memory is shared by its own ranks only") {
  const hw::Machine m = hw::load_machine("a100-server");
  const int64_t host = m.host.memory_bytes;
  CHECK(rank_memory(m, 16, 4).host_bytes == host / 4);
  CHECK(rank_memory(m, 4, 2).host_bytes == host / 2);
  CHECK(rank_memory(m, 8, 8).host_bytes == host);
  CHECK(rank_memory(m, 4).host_bytes == host / 4);
}

TEST_CASE("across nodes every chunk collective spans all ranks and is priced as NCCL's ring over the NICs") {
  const hw::HardwareCostModel cost(hw::load_machine("a100-server"));
  const hw::Machine& m = cost.machine();
  REQUIRE(m.inter_node.has_value());
  const Workload w = small_workload();
  OffloadKnobs k = base_knobs("protrain");
  k.n_persist = 0;
  k.n_buffer = 2;
  const int gpus = 16, nodes = 4;
  const CompiledPlan cp = compile_offload_plan(w, gpus, rank_memory(m, gpus, nodes), k, {}, nodes);
  CHECK(cp.plan.nodes == nodes);
  int collectives = 0;
  for (const auto& op : cp.plan.ops) {
    if (op.kind == traces::OpKind::kH2D && op.sub_kind == traces::OpSubKind::kParamChunk) {
      // Each rank uploads its 1/16 shard of the chunk before the all-gather.
      const auto& ch = cp.chunks->chunks[static_cast<size_t>(op.chunk)];
      CHECK(op.work.bytes == ceil_div(ch.used_elems * cp.chunks->bytes_per_elem, int64_t{gpus}));
    }
    if (op.kind != traces::OpKind::kAllGather && op.kind != traces::OpKind::kReduceScatter) continue;
    ++collectives;
    CHECK(op.group.ranks == gpus);
    CHECK(op.group.ranks_per_node == gpus / nodes);
    // A ring over 4 nodes with one 100 Gb/s NIC each: the node's measured inter-node busbw is the
    // rate (the intra-node NVLink is faster), the inter-node alpha the latency.
    const double S = static_cast<double>(op.work.bytes);
    const double want = m.inter_node->all_gather.alpha_us * 1e-6 +
                        (gpus - 1.0) / gpus * S / (m.inter_node->all_gather.busbw_GBps * 1e9);
    CHECK(cost.cost(op, cp.plan).stream_time() == from_seconds(want));
  }
  CHECK(collectives > 0);
  // On one node the same plan carries no placement, as before (the intra-node NVLink prices it).
  const CompiledPlan one = compile_offload_plan(w, 4, rank_memory(m, 4), k);
  CHECK(one.plan.nodes == 0);
  for (const auto& op : one.plan.ops) CHECK(op.group.ranks_per_node == 0);
  // The analytic model prices the fetch the same way: the shard's upload plus the ring.
  const WorkloadTimes t = workload_times(w, *cp.chunks, cost, gpus, k, nodes);
  const auto& c0 = cp.chunks->chunks[0];
  const double used = static_cast<double>(c0.used_elems * cp.chunks->bytes_per_elem);
  const double shard = static_cast<double>(ceil_div(c0.used_elems * cp.chunks->bytes_per_elem, int64_t{gpus}));
  CHECK(t.fetch_s[0] == Approx(cost.copy_seconds(shard, hw::CopyDirection::kH2D, true, false) +
                               cost.collective_time(hw::CollectiveKind::kAllGather, used, gpus, gpus / nodes, 1).seconds));
  CHECK(cost.collective_time(hw::CollectiveKind::kAllGather, used, gpus, gpus / nodes, 1).seconds >
        cost.collective_time(hw::CollectiveKind::kAllGather, used, 4).seconds);
}

TEST_CASE("CPU Adam and host passes share a node's host among that node's ranks only") {
  const hw::HardwareCostModel cost(hw::load_machine("a100-server"));
  const Workload w = small_workload();
  const OffloadKnobs k = base_knobs("deepspeed");
  for (const auto& [gpus, nodes, sharing] : {std::tuple{4, 2, 2}, std::tuple{16, 4, 4}, std::tuple{4, 1, 4}}) {
    const CompiledPlan cp = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus, nodes), k, {}, nodes);
    int adams = 0;
    for (const auto& op : cp.plan.ops) {
      if (op.kind != traces::OpKind::kAdamCpu) continue;
      ++adams;
      INFO(gpus << " GPUs on " << nodes << " nodes");
      CHECK(cost.cost(op, cp.plan).stream_time() ==
            from_seconds(cost.cpu_adam_seconds(static_cast<double>(op.work.params), sharing)));
    }
    CHECK(adams > 0);
  }
}

TEST_CASE("GPT-3 175B: no single A100 server holds its offloaded states, four do (batch 256 = 16 per GPU)") {
  // ProTrain's setting (REFERENCE §1): sequence 1024, global batch 256 on 4 x 4 A100. One server's
  // 1 TB cannot hold 175B parameters' offloaded states (at least the fp16 shard plus the fp32
  // master, m and v: 14 B per parameter, 2.45 TB); four servers' 4 TB can.
  const hw::HardwareCostModel cost(hw::load_machine("a100-server"));
  SearchOptions o;
  o.batch = 16;
  o.seq = 1024;
  o.simulate_top = 2;
  o.gpus = 4;
  const SearchResult one = search_policy(find_model("gpt3-175b"), cost, o);
  REQUIRE_FALSE(one.found);
  o.gpus = 16;
  o.nodes = 4;
  const SearchResult four = search_policy(find_model("gpt3-175b"), cost, o);
  REQUIRE(four.found);
  CHECK(four.best.tokens_per_s == Approx(16.0 * 16 * 1024 / four.best.iteration_s));
  CHECK(four.best_plan.plan.nodes == 4);
  const RankMemory cap = rank_memory(cost.machine(), 16, 4);
  CHECK(four.best.peak_pinned_bytes + four.best.peak_pageable_bytes <= cap.host_bytes);
  // Each rank holds a 1/16 shard of the offloaded states, 14 B per offloaded parameter (all but the
  // few persistent chunks, so at least 90 % of the parameters).
  CHECK(static_cast<double>(four.best.peak_pinned_bytes + four.best.peak_pageable_bytes) >=
        14.0 * static_cast<double>(find_model("gpt3-175b").parameter_count()) / 16 * 0.9);
}

TEST_CASE("ranks filling part of each node still get the node's whole NIC: theirs is the only group there") {
  const hw::HardwareCostModel cost(hw::load_machine("a100-server"));
  const hw::Machine& m = cost.machine();
  const hw::CollectiveModel& cm = cost.collectives();
  const double nic = m.inter_node->all_gather.busbw_GBps;  // the node's rate (no /network section)
  // 2 of a node's 4 GPUs in the group: alone on the node it has the whole NIC; as one of two
  // groups sharing the node (Megatron's default reading) half of it.
  CHECK(cm.bus_GBps(hw::CollectiveKind::kAllGather, 4, 2, 1) == Approx(nic));
  CHECK(cm.bus_GBps(hw::CollectiveKind::kAllGather, 4, 2) == Approx(nic * 2 / 4));
  CHECK(cm.bus_GBps(hw::CollectiveKind::kAllGather, 4, 2, 2) == Approx(nic / 2));
  // Full nodes: one group per node either way.
  CHECK(cm.bus_GBps(hw::CollectiveKind::kAllGather, 16, 4, 1) == cm.bus_GBps(hw::CollectiveKind::kAllGather, 16, 4));
  // The offload compiler marks its chunk collectives as the only group on their nodes.
  const Workload w = small_workload();
  const CompiledPlan cp = compile_offload_plan(w, 4, rank_memory(m, 4, 2), base_knobs("protrain"), {}, 2);
  int collectives = 0;
  for (const auto& op : cp.plan.ops) {
    if (op.kind != traces::OpKind::kAllGather && op.kind != traces::OpKind::kReduceScatter) continue;
    ++collectives;
    CHECK(op.group.groups_per_node == 1);
    const double want = m.inter_node->all_gather.alpha_us * 1e-6 + 3.0 / 4 * static_cast<double>(op.work.bytes) / (nic * 1e9);
    CHECK(cost.cost(op, cp.plan).stream_time() == from_seconds(want));
  }
  CHECK(collectives > 0);
}
