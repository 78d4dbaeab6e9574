// The search: the best plan is the best of what it simulated, the Pareto front is monotone, a
// model that fits nowhere says how much memory it would need.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/search/search.h"

using namespace protwin;
using namespace protwin::sim;

TEST_CASE("the best plan fits, and the Pareto front trades memory for throughput") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  o.gpus = 4;
  const SearchResult r = search_policy(find_model("gpt2-10b"), cost, o);
  REQUIRE(r.found);
  REQUIRE(r.best.peak_gpu_bytes <= rank_memory(cost.machine(), 4).gpu_bytes);
  REQUIRE(r.best.bound_gpu_bytes <= rank_memory(cost.machine(), 4).gpu_bytes);
  REQUIRE(r.best.tokens_per_s == Approx(r.best.batch * 1024 * 4 / r.best.iteration_s));
  for (size_t i = 1; i < r.pareto.size(); ++i) {
    REQUIRE(r.pareto[i].peak_gpu_bytes >= r.pareto[i - 1].peak_gpu_bytes);
    REQUIRE(r.pareto[i].tokens_per_s > r.pareto[i - 1].tokens_per_s);
  }
  REQUIRE(r.pareto.back().tokens_per_s == r.best.tokens_per_s);
  // Re-simulating the best plan reproduces its time (determinism).
  REQUIRE(r.best_report.iteration.seconds() == Approx(r.best.iteration_s));
}

TEST_CASE("a model that fits under no setting reports the smallest memory it would need") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  o.gpus = 1;
  o.batch = 1;
  const SearchResult r = search_policy(find_model("gpt3-175b"), cost, o);
  REQUIRE_FALSE(r.found);
  REQUIRE(r.configurations > 0);
  REQUIRE(r.pruned == r.configurations);
  // Each pool's least need is no more than the closest setting's need of that pool.
  REQUIRE(r.least_gpu_bytes > 0);
  REQUIRE(r.least_gpu_bytes <= r.smallest_peak_gpu_bytes);
  REQUIRE(r.least_host_bytes <= r.smallest_host_bytes);
}

TEST_CASE("search options are checked") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  o.gpus = 8;
  REQUIRE_THROWS_WITH(search_policy(find_model("gpt2-small"), cost, o),
                      "--gpus: 8 GPUs requested but rtx3090-server has 4");
  o.gpus = 1;
  o.system = "x";
  REQUIRE_THROWS_WITH(search_policy(find_model("gpt2-small"), cost, o), Catch::StartsWith("--system: unknown system 'x'"));
}

// The unrestricted search covers every restricted one, so it must never find less. gpt2-10b on one
// RTX 3090 is the case where ranking by the analytic model alone missed a 27 % better plan (the
// analytic model does not charge swap-outs for sharing PCIe with prefetches).
TEST_CASE("the unrestricted search is at least as good as each ablation's search") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  o.gpus = 1;
  o.batch = 16;
  const SearchResult full = search_policy(find_model("gpt2-10b"), cost, o);
  REQUIRE(full.found);
  SearchOptions ckpt = o;
  ckpt.all_checkpoint = true;
  SearchOptions no_swap = o;
  no_swap.fix_n_swap = 0;
  for (const SearchOptions& restricted : {ckpt, no_swap}) {
    const SearchResult r = search_policy(find_model("gpt2-10b"), cost, restricted);
    REQUIRE(r.found);
    CHECK(full.best.tokens_per_s >= r.best.tokens_per_s);
  }
}
