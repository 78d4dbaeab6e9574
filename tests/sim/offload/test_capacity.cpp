// The capacity bisection (sim/offload/search/capacity.h) against the search it bisects: the size it
// reports fits, one layer more does not, and what it says of that next size is the search's own.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/search/capacity.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

namespace {
SearchResult search_at(const hw::HardwareCostModel& cost, SearchOptions o, int64_t hidden, int64_t layers) {
  o.batch = 1;
  o.simulate_top = 2;
  return search_policy(gpt2_family(hidden, layers, o.seq), cost, o);
}
}  // namespace

TEST_CASE("capacity: the largest GPT-2-family size fits, one layer more does not, as the search says") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  o.system = "zero-offload";
  int ticks = 0;
  const Capacity c = largest_gpt2_model(cost, o, 40, [&] { ++ticks; });
  CHECK(ticks == 2);  // once per hidden size
  REQUIRE(c.max_params > 0);
  REQUIRE(c.layers < 40);
  CHECK(c.max_params == gpt2_family(c.hidden, c.layers, 0).parameter_count());
  const SearchResult fit = search_at(cost, o, c.hidden, c.layers);
  REQUIRE(fit.found);
  CHECK(c.priced_by == fit.best.priced_by);
  const SearchResult next = search_at(cost, o, c.hidden, c.layers + 1);
  REQUIRE_FALSE(next.found);
  CHECK(c.next_size.layers == c.layers + 1);
  CHECK(c.next_size.least_gpu_bytes == next.least_gpu_bytes);
  CHECK(c.next_size.smallest_host_bytes == next.smallest_host_bytes);
  const RankMemory cap = rank_memory(cost.machine(), 1);
  // Which memory alone would never suffice for any setting of the next size.
  const bool gpu = next.least_gpu_bytes > cap.gpu_bytes, host = next.least_host_bytes > cap.host_bytes;
  CHECK(c.next_size.limited_by == (gpu && host ? "gpu and host memory"
                                   : gpu       ? "gpu memory"
                                   : host      ? "host memory"
                                               : "gpu and host memory together"));
  // The other hidden size's largest model is no larger (the bisection keeps the larger).
  const int64_t other = c.hidden == 4096 ? 8192 : 4096;
  for (int64_t layers = 1; layers <= 40; layers *= 2)
    if (search_at(cost, o, other, layers).found) CHECK(gpt2_family(other, layers, 0).parameter_count() <= c.max_params);
}

TEST_CASE("capacity: at the layer cap the cap is the answer, the position table grows with a long sequence") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  o.system = "ddp";
  const Capacity c = largest_gpt2_model(cost, o, 1);
  CHECK((c.layers == 1 && c.hidden == 8192));
  CHECK(gpt2_family(4096, 2, 2048).max_positions == 2048);
  CHECK(gpt2_family(4096, 2, 512).max_positions == kGpt2Positions);
}
