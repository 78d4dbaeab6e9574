// A HuggingFace single-GPU training step (`search --system ddp --gpus 1 --dtype fp32 --hf-eager`,
// issue #18 item 5). Oracles: the forward and backward the search reports are the sums of their
// blocks' kernels as the hardware cost model prices them (one GPU, nothing overlaps compute), and
// forward + backward + the exposed optimizer step is the simulated iteration.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/search/search.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

TEST_CASE("HF single-GPU step: forward and backward are their kernels' sums and add up to the step", "[policy][hf]") {
  const hw::HardwareCostModel cost(hw::load_machine("a100-80g-pcie-server"));
  const ModelSpec m = resolve_model("gpt2:hidden=256,layers=4,heads=4,vocab=1000,max_positions=256");
  SearchOptions o;
  o.system = "ddp";
  o.gpus = 1;
  o.batch = 2;
  o.seq = 256;
  o.dtype = "fp32";
  o.hf_eager = true;
  const SearchResult r = search_policy(m, cost, o);
  REQUIRE(r.found);
  const Candidate& b = r.best;
  CHECK(b.forward_s + b.backward_s + b.exposed_optimizer_s == Approx(b.iteration_s).epsilon(1e-12));
  CHECK(b.exposed_optimizer_s > 0);

  // The kernels of the HF workload (eager kernels, dropout 0.1 everywhere GPT2Config puts it).
  const Workload w = options_workload(m, o, 2);
  CHECK(w.options.hf_eager);
  CHECK(w.options.dropout);
  double fwd = 0, bwd = 0;
  for (const auto& blk : w.blocks) {
    for (const auto& k : blk.forward) fwd += static_cast<double>(k.count) * cost.kernel_time(k, false).seconds;
    for (const auto& k : blk.backward) bwd += static_cast<double>(k.count) * cost.kernel_time(k, true).seconds;
  }
  // Each op's time is rounded up to the nanosecond: one ns per op at most.
  const double slack = 1e-9 * static_cast<double>(r.best_report.ops.size());
  CHECK(b.forward_s == Approx(fwd).margin(slack));
  CHECK(b.backward_s == Approx(bwd).margin(slack));
}
