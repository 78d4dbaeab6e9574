#include "sim/parallel/compiler/placement.h"

#include <algorithm>
#include <map>

#include "traces/error.h"

namespace protwin::sim::parallel {

namespace {

struct Coords {
  int64_t tp, cp, dp, pp;
};

// Rank r's coordinates: r = tp + T (cp + C (dp + D pp)).
Coords coords(int64_t r, const ParallelSizes& s) {
  return {r % s.tp, r / s.tp % s.cp, r / (s.tp * s.cp) % s.dp, r / (s.tp * s.cp * s.dp)};
}

// Groups are the ranks sharing key(r); reports the worst group's spread over nodes.
template <typename Key>
GroupPlacement analyse(const std::string& name, int64_t size, const ParallelSizes& s, int64_t g,
                       Key key) {
  std::map<int64_t, std::map<int64_t, int64_t>> members;  // group key -> node -> count
  for (int64_t r = 0; r < s.world(); ++r) ++members[key(coords(r, s))][r / g];
  GroupPlacement p;
  p.name = name;
  p.size = size;
  for (const auto& [k, per_node] : members) {
    int64_t most = 0;
    for (const auto& [node, n] : per_node) most = std::max(most, n);
    const int64_t spans = static_cast<int64_t>(per_node.size());
    PROTWIN_CHECK(most * spans == size, "--tp ", s.tp, " --cp ", s.cp, " --dp ", s.dp, " --pp ",
                  s.pp, ": a ", name, " group of ", size, " ranks would be spread unevenly over ",
                  spans, " nodes of ", g, " GPUs\nhint: choose sizes whose groups fill nodes evenly");
    if (spans > p.nodes || (spans == p.nodes && most > p.ranks_per_node)) {
      p.nodes = spans;
      p.ranks_per_node = most;
    }
  }
  if (p.nodes == 1) p.ranks_per_node = size;
  return p;
}

}  // namespace

Placement place_groups(const ParallelSizes& s, int64_t g, int64_t nodes) {
  for (const auto& [flag, v] : {std::pair<const char*, int64_t>{"--tp", s.tp}, {"--cp", s.cp},
                                {"--pp", s.pp}, {"--dp", s.dp}, {"--nodes", nodes}})
    PROTWIN_CHECK(v >= 1, flag, " ", v, ": must be at least 1");
  PROTWIN_CHECK(g >= 1, "machine: /gpu/count ", g, " must be at least 1");
  const int64_t world = s.world();
  PROTWIN_CHECK(world == nodes * g || (nodes == 1 && world <= g), "--nodes ", nodes, ": ", nodes,
                " node(s) of ", g, " GPUs hold ", nodes * g, " GPUs, but TP*CP*PP*DP = ", s.tp, "*",
                s.cp, "*", s.pp, "*", s.dp, " = ", world);
  Placement p;
  p.sizes = s;
  p.gpus_per_node = g;
  p.nodes = nodes;
  p.tp = analyse("tp", s.tp, s, g, [&](const Coords& c) { return c.cp + s.cp * (c.dp + s.dp * c.pp); });
  p.cp = analyse("cp", s.cp, s, g, [&](const Coords& c) { return c.tp + s.tp * (c.dp + s.dp * c.pp); });
  p.dp = analyse("dp", s.dp, s, g, [&](const Coords& c) { return c.tp + s.tp * (c.cp + s.cp * c.pp); });
  p.dp_cp = analyse("dp_cp", s.dp * s.cp, s, g, [&](const Coords& c) { return c.tp + s.tp * c.pp; });
  p.pp = analyse("pp", s.pp, s, g, [&](const Coords& c) { return c.tp + s.tp * (c.cp + s.cp * c.dp); });
  // Stage s's rank r talks to r + stride (stage s+1); the wrap PP-1 -> 0 to r - (PP-1) stride.
  const int64_t stride = s.tp * s.cp * s.dp;
  p.stage_link_inter_node.assign(static_cast<size_t>(s.pp), false);
  for (int64_t r = 0; r < world; ++r) {
    const int64_t stage = r / stride;
    const int64_t peer = stage + 1 < s.pp ? r + stride : r - (s.pp - 1) * stride;
    if (peer / g != r / g) p.stage_link_inter_node[static_cast<size_t>(stage)] = true;
  }
  return p;
}

}  // namespace protwin::sim::parallel
