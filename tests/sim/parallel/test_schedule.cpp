// The 1F1B and interleaved orders. Oracles: Megatron's warm-up counts, every (chunk,
// micro-batch) once per direction, forwards before their backwards, at most p - s micro-batches
// in flight on stage s (non-interleaved).
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "sim/parallel/compiler/pipeline_schedule.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;

namespace {

// Stage `stage`'s whole schedule, task by task.
std::vector<PipeTask> pipeline_order(int stage, int p, int v, int64_t m) {
  std::vector<PipeTask> order;
  for (int64_t i = 0; i < 2 * m * v; ++i) order.push_back(pipeline_task(stage, p, v, m, i));
  return order;
}

}  // namespace

TEST_CASE("1F1B: warm-up p-s-1 forwards, then one forward one backward, then the cool-down", "[parallel][schedule]") {
  const int p = 4;
  const int64_t m = 8;
  for (int s = 0; s < p; ++s) {
    const auto order = pipeline_order(s, p, 1, m);
    REQUIRE(order.size() == 2 * m);
    const int warmup = p - s - 1;
    for (int i = 0; i < warmup; ++i) CHECK((order[static_cast<size_t>(i)].forward && order[static_cast<size_t>(i)].microbatch == i));
    CHECK(order[static_cast<size_t>(warmup)].forward);
    CHECK(!order[static_cast<size_t>(warmup) + 1].forward);
    int64_t in_flight = 0, most = 0, next_f = 0, next_b = 0;
    for (const auto& t : order) {
      if (t.forward) CHECK(t.microbatch == next_f++);
      else CHECK(t.microbatch == next_b++);
      in_flight += t.forward ? 1 : -1;
      most = std::max(most, in_flight);
    }
    CHECK(most == p - s);
  }
  // Fewer micro-batches than stages: all forwards, then all backwards.
  const auto few = pipeline_order(0, 4, 1, 2);
  CHECK((few[0].forward && few[1].forward && !few[2].forward && !few[3].forward));
}

TEST_CASE("interleaved: every chunk and micro-batch once each way, Megatron's warm-up", "[parallel][schedule]") {
  const int p = 4, v = 2;
  const int64_t m = 8;
  for (int s = 0; s < p; ++s) {
    const auto order = pipeline_order(s, p, v, m);
    REQUIRE(order.size() == static_cast<size_t>(2 * m * v));
    std::set<std::tuple<bool, int, int64_t>> seen;
    for (const auto& t : order) CHECK(seen.insert({t.forward, t.chunk, t.microbatch}).second);
    size_t warm = 0;
    while (order[warm].forward) ++warm;
    CHECK(warm == static_cast<size_t>((p - s - 1) * 2 + (v - 1) * p + 1));  // + the steady state's first forward
    // A (chunk, micro-batch) runs forward before backward.
    std::set<std::pair<int, int64_t>> done;
    for (const auto& t : order) {
      if (t.forward) done.insert({t.chunk, t.microbatch});
      else CHECK(done.count({t.chunk, t.microbatch}) == 1);
    }
  }
  // m not a multiple of p with v > 1: the compiler refuses it (test_megatron.cpp, "--vpp 2: ...").
}
