// Test helper (not part of protwin): compiles an fp32 one-GPU plan for the runtime with the
// simulator's plan compiler, e.g. for the speed comparison in docs/RUNTIME.md.
//   protwin_rt_make_plan MODEL BATCH SEQ OUT.json [KNOBS_JSON]
// MODEL: a zoo name or an inline spec (gpt:hidden=512,layers=8,heads=8,vocab=256). Without
// KNOBS_JSON the plan is all-resident (every chunk persistent, every activation kept).
#include <cstdlib>
#include <iostream>

#include "sim/offload/compiler/knobs.h"
#include "tests/runtime/plan_fixtures.h"

int main(int argc, char** argv) {
  using namespace protwin;
  if (argc < 5) {
    std::cerr << "usage: protwin_rt_make_plan MODEL BATCH SEQ OUT.json [KNOBS_JSON]\n";
    return 2;
  }
  try {
    const sim::Workload w = rt::testing::tiny_workload(argv[1], std::atoll(argv[2]), std::atoll(argv[3]));
    traces::Plan plan;
    if (argc > 5) {
      const nlohmann::json j = nlohmann::json::parse(argv[5]);
      const sim::offload::OffloadKnobs k = sim::offload::knobs_from_json(j, "KNOBS_JSON");
      plan = rt::testing::compile_plan(w, k, int64_t{64} << 30);
    } else {
      plan = rt::testing::resident_plan(w);
    }
    traces::write_plan(plan, argv[4]);
  } catch (const std::exception& e) {
    std::cerr << "protwin_rt_make_plan: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
