// Measured memory on ranks (issue 23): a rank's device peak against the simulator. Its own target,
// run alone (SERIAL): a reduction's scratch is held while a rank waits for its peer, so a loaded
// machine's skew between the ranks moves the peak.
#include "hwmodels/hardware_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/policy/runtime_memory.h"
#include "tests/runtime/rank_runs.h"

namespace {
using namespace protwin::rt::testing;
}  // namespace

// Measured memory on ranks (issue 23): each rank's device peak (the caching allocator's high
// water, rank 0's reported) against the simulator's replay of the runtime's tensors in the plan's
// simulated schedule, collective scratch and sharded buffers included.
TEST_CASE("ranks: the simulator predicts a rank's measured device peak within 5 %", "[runtime][mpi][memory]") {
  if (!have_runtime()) return;  // registered only where protwin-rt is built
  constexpr double kLink = 20, kNet = 5;
  const protwin::hw::HardwareCostModel cost(protwin::rt::testing::host_machine(kLink, kRanks, kNet));
  for (const std::string model : {"gpt2-tiny", "llama-tiny"}) {
    const protwin::sim::Workload w = tiny_workload(model, 4, 64);
    std::vector<protwin::traces::Plan> plans{resident_plan(w, kRanks)};
    const std::vector<protwin::sim::OffloadKnobs> ks = policies(w);
    for (size_t i = 0; i < 4; ++i) plans.push_back(compile_plan(w, ks[i], kGpuBytes, kRanks));
    for (size_t i = 0; i < plans.size(); ++i) {
      const std::string p = write(plans[i], model + ".memory" + std::to_string(i) + ".json");
      const protwin::traces::Report schedule = protwin::sim::PlanSimulator(cost).run(plans[i]);
      const int64_t predicted = protwin::sim::predict_runtime_memory(plans[i], schedule).allocated_peak_bytes;
      const CliResult r = run_protwin("train --plan " + p + " --steps 2 --json --link-GBps 20 --net-GBps 5", mpirun(kRanks));
      INFO(p << "; stderr:\n" << r.err);
      REQUIRE(r.code == 0);
      const nlohmann::json j = nlohmann::json::parse(r.out);
      const int64_t measured = j.at("peak_device_bytes").get<int64_t>();
      INFO("predicted " << predicted << " measured " << measured << "; the plan's bytes "
                        << j.at("plan_peak_device_bytes").get<int64_t>());
      CHECK(std::abs(static_cast<double>(predicted - measured)) <= 0.05 * static_cast<double>(measured));
    }
  }
}
