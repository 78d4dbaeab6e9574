// Placement of Megatron's groups (rank order tp-cp-dp-pp) on nodes. Oracle: the groups written
// out by hand from r = tp + T(cp + C(dp + D pp)), node = r / G.
#include <catch2/catch.hpp>

#include "sim/parallel/compiler/placement.h"
#include "traces/error.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;

TEST_CASE("TP and CP fill a node first, DP next, PP farthest apart", "[parallel][placement]") {
  // T2 C2 D4 P2 on 8-GPU nodes: 32 ranks, 4 nodes.
  const Placement p = place_groups({2, 2, 2, 4}, 8, 4);
  // TP {0,1}; CP {0,2}: inside a node.
  CHECK((p.tp.size == 2 && p.tp.nodes == 1 && p.tp.ranks_per_node == 2));
  CHECK((p.cp.size == 2 && p.cp.nodes == 1 && p.cp.ranks_per_node == 2));
  // DP {0,4,8,12}: nodes 0,0,1,1.
  CHECK((p.dp.size == 4 && p.dp.nodes == 2 && p.dp.ranks_per_node == 2));
  CHECK(std::string(p.dp.scope()) == "inter_node");
  // DP x CP {0,2,4,...,14}: nodes 0 and 1, 4 each.
  CHECK((p.dp_cp.size == 8 && p.dp_cp.nodes == 2 && p.dp_cp.ranks_per_node == 4));
  // PP {0,16}: nodes 0 and 2.
  CHECK((p.pp.size == 2 && p.pp.nodes == 2 && p.pp.ranks_per_node == 1));
  CHECK(p.stage_link_inter_node == std::vector<bool>{true, true});
}

TEST_CASE("small layouts stay inside one node", "[parallel][placement]") {
  const Placement p = place_groups({2, 1, 4, 1}, 8, 1);
  CHECK((p.pp.nodes == 1 && p.pp.ranks_per_node == 4));
  CHECK(p.stage_link_inter_node == std::vector<bool>{false, false, false, false});
  // A half-full node: 4 GPUs of 8.
  const Placement h = place_groups({1, 1, 1, 4}, 8, 1);
  CHECK((h.dp.nodes == 1 && h.dp.ranks_per_node == 4));
}

TEST_CASE("pipeline links cross nodes only where a stage boundary is a node boundary", "[parallel][placement]") {
  // T2 D2: 4 ranks per stage, 2 stages per 8-GPU node; P4 over 2 nodes.
  const Placement p = place_groups({2, 1, 4, 2}, 8, 2);
  CHECK(p.stage_link_inter_node == std::vector<bool>{false, true, false, true});
}

TEST_CASE("uneven groups and a world that does not fill the nodes are refused", "[parallel][placement][errors]") {
  // D3 P8 over 3 nodes: the DP group of stage 2 is ranks 6, 7 | 8.
  CHECK_THROWS_WITH(place_groups({1, 1, 8, 3}, 8, 3),
                    "--tp 1 --cp 1 --dp 3 --pp 8: a dp group of 3 ranks would be spread unevenly over 2 "
                    "nodes of 8 GPUs\nhint: choose sizes whose groups fill nodes evenly");
  CHECK_THROWS_WITH(place_groups({2, 1, 1, 4}, 8, 2),
                    "--nodes 2: 2 node(s) of 8 GPUs hold 16 GPUs, but TP*CP*PP*DP = 2*1*1*4 = 8");
}
