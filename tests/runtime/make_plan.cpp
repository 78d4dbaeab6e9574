// Test helper (not part of protwin): compiles an fp32 one-GPU plan for the runtime with the
// simulator's plan compiler, e.g. for the speed comparison in docs/RUNTIME.md.
//   protwin_rt_make_plan MODEL BATCH SEQ OUT.json [KNOBS_JSON]
// MODEL: a zoo name or an inline spec (gpt:hidden=512,layers=8,heads=8,vocab=256). Without
// KNOBS_JSON the plan is all-resident (every chunk persistent, every activation kept).
#include <cstdlib>
#include <iostream>

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
      sim::OffloadKnobs k;
      k.chunk_bytes = j.value("chunk_bytes", k.chunk_bytes);
      k.n_persist = j.value("n_persist", k.n_persist);
      k.n_buffer = j.value("n_buffer", k.n_buffer);
      k.n_swap = j.value("n_swap", k.n_swap);
      k.n_checkpoint = j.value("n_checkpoint", k.n_checkpoint);
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
