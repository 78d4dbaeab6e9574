// The search: the best plan is the best of what it simulated, the Pareto front is monotone, a
// model that fits nowhere says how much memory it would need.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/analytic_model.h"
#include "sim/offload/compiler/block_layout.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

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
  // The best plan's report is the one its time came from, to the nanosecond.
  REQUIRE(r.best_report.iteration.seconds() == r.best.iteration_s);
  // Re-simulating the best plan reproduces it exactly (determinism).
  REQUIRE(PlanSimulator(cost).run(r.best_plan.plan).iteration == r.best_report.iteration);
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

// A tied model whose every chunk fits on the GPU: the all-persistent setting (no buffers, the
// tied head's chunk persistent too) is in the search space, so the search never returns anything
// slower. gpt2-1b on one A100 80 GB.
TEST_CASE("settings that keep the tied embedding's chunk persistent are searched, up to all chunks") {
  const hw::HardwareCostModel cost(hw::load_machine("a100-server"));
  SearchOptions o;
  o.gpus = 1;
  o.batch = 4;
  const ModelSpec m = find_model("gpt2-1b");
  const Workload w = options_workload(m, o, o.batch);
  for (const char* system : {"protrain", "colossalai"}) {
    INFO(system);
    o.system = system;
    const SearchResult r = search_policy(m, cost, o);
    REQUIRE(r.found);
    OffloadKnobs all = base_knobs(system);
    all.n_persist = static_cast<int>(layout_for(w, all).chunks.size());
    all.n_buffer = 1;
    const Candidate c = evaluate(w, cost, 1, all);
    REQUIRE(c.failure.empty());
    REQUIRE(c.peak_gpu_bytes <= rank_memory(cost.machine(), 1).gpu_bytes);
    CHECK(r.best.iteration_s <= c.iteration_s);
  }
}

namespace {
AnalyticEstimate estimate(const Workload& w, const hw::HardwareCostModel& cost, int gpus, OffloadKnobs k) {
  const ChunkLayout L = layout_for(w, k);
  const WorkloadTimes t = workload_times(w, L, cost, gpus, k);
  return analytic_estimate(t, k, block_layout(static_cast<int>(w.model.layers), k.n_swap, k.n_checkpoint, k.swap_spacing));
}
}  // namespace

TEST_CASE("analytic model: persistent chunks' gradients are all-reduced, swap-ins are host-to-device copies") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  SearchOptions o;
  const Workload w = options_workload(find_model("gpt2-small"), o, 2);
  // Without prefetch each block's backward and communication add up, so 4 GPUs' backward is 1
  // GPU's plus one all-reduce of every chunk (DDP: all persistent, nothing offloaded).
  OffloadKnobs ddp = base_knobs("ddp");
  ddp.prefetch = false;
  const ChunkLayout L = layout_for(w, ddp);
  ddp.n_persist = static_cast<int>(L.chunks.size());
  double all_reduce = 0;
  for (const auto& c : L.chunks)
    all_reduce += cost.collective_time(hw::CollectiveKind::kAllReduce, static_cast<double>(c.used_elems * 2), 4).seconds;
  CHECK(estimate(w, cost, 4, ddp).backward_s == Approx(estimate(w, cost, 1, ddp).backward_s + all_reduce).epsilon(1e-12));
  // One SWAP layer (the first) adds its activations' H2D copy to backward; the 3090 server copies
  // 12 GB/s up and 13 GB/s down, so the direction shows.
  OffloadKnobs k;
  k.prefetch = false;
  OffloadKnobs swap = k;
  swap.n_swap = 1;
  const auto& first_layer = w.blocks[1];
  REQUIRE(first_layer.layer == 0);
  const double up = cost.copy_seconds(static_cast<double>(first_layer.saved_bytes), hw::CopyDirection::kH2D, true, false);
  const double down = cost.copy_seconds(static_cast<double>(first_layer.saved_bytes), hw::CopyDirection::kD2H, true, false);
  REQUIRE(up != Approx(down));
  CHECK(estimate(w, cost, 1, swap).backward_s == Approx(estimate(w, cost, 1, k).backward_s + up).epsilon(1e-12));
}

TEST_CASE("the activations' peak, walked by hand: kept bytes, swap-outs in flight within the spacing, temporaries") {
  // Block 0 (embedding) keeps 10 B; layers 0..2 are blocks 1..3, modes swap, swap, none.
  WorkloadTimes t;
  t.fwd_s.assign(4, 0);
  t.layer_block = {1, 2, 3};
  t.saved = {10, 100, 200, 400};
  t.ckpt = {0, 1, 2, 4};
  t.fwd_transient = {5, 50, 60, 70};
  t.bwd_transient = {7, 30, 20, 10};
  const std::vector<ActMode> modes = {ActMode::kSwap, ActMode::kSwap, ActMode::kNone};
  // Spacing 3: block 3's forward holds 10 + 400 kept, blocks 1 and 2 in flight (300), 70 temporary.
  CHECK(activation_peak(t, 3, modes).gpu_bytes == 780);
  CHECK(activation_peak(t, 2, modes).gpu_bytes == 680);  // only block 2 in flight
  // Spacing 1: nothing in flight; block 3's forward 480 beats block 2's backward 10 + 200 + 20.
  CHECK(activation_peak(t, 1, modes).gpu_bytes == 480);
  CHECK(activation_peak(t, 1, modes).swapped_bytes == 300);
  // Checkpointing layer 2 keeps 4 B in forward (84 there), but its backward recomputes all 400:
  // 10 + 4 + 400 + 10.
  const ActivationPeak ckpt = activation_peak(t, 1, {ActMode::kSwap, ActMode::kSwap, ActMode::kCheckpoint});
  CHECK(ckpt.gpu_bytes == 424);
  CHECK(ckpt.swapped_bytes == 300);
}
