// Memory while each system builds and shards the model (sim/offload/analytic/init_memory.h, issue #18 item
// 6). Oracles: the closed forms of each system's init code (N parameters, U the largest block, P
// the largest parameter tensor), and a search whose steady state fits but whose initialisation
// does not.
#include <catch2/catch.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/analytic/init_memory.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

TEST_CASE("init peaks: closed forms of each system's model construction", "[policy][init]") {
  // GPT-2 with h = 256, V = 1000, 128 positions: a decoder layer (12 h^2 + 13 h) is the largest
  // unit, an MLP weight (4 h x h, more than the V x h token table) the largest tensor.
  const ModelSpec m = resolve_model("gpt2:hidden=256,layers=4,heads=4,vocab=1000,max_positions=128");
  WorkloadOptions wo;
  wo.seq = 128;
  const Workload w = build_workload(m, wo);
  const int64_t n = m.parameter_count(), h = 256, unit = 12 * h * h + 13 * h, tensor = 4 * h * h;
  REQUIRE(n == (1000 + 128) * h + 4 * unit + 2 * h);
  const InitMemory ddp = init_memory(w, base_knobs("ddp"));
  CHECK(ddp.how == "ddp");
  CHECK(ddp.host_bytes == 4 * n);  // the fp32 model on the CPU before .to(device)
  CHECK(ddp.gpu_bytes == 0);
  const InitMemory fsdp = init_memory(w, base_knobs("fsdp"));
  CHECK(fsdp.how == "fsdp");
  CHECK(fsdp.host_bytes == 4 * n + 4 * unit);  // plus torch.cat of the unit being flattened
  const InitMemory ds = init_memory(w, base_knobs("deepspeed"));
  CHECK(ds.how == "zero_init");
  CHECK(ds.gpu_bytes == 2 * tensor);  // the module being built, fp16 on the GPU, before partitioning
  CHECK(ds.host_bytes == 0);
  for (const char* s : {"protrain", "colossalai"}) {
    const InitMemory c = init_memory(w, base_knobs(s));
    CHECK(c.how == "chunks");
    CHECK(c.host_bytes == 4 * tensor);  // one parameter materialised in fp32
  }
}

TEST_CASE("a setting whose steady state fits but whose initialisation does not is refused", "[policy][init]") {
  // DDP keeps nothing on the host in the steady state, but the script builds the fp32 model there
  // first: with less host memory than 4N per rank the setting cannot start.
  const ModelSpec m = find_model("gpt2-small");
  SearchOptions o;
  o.system = "ddp";
  o.batch = 1;
  o.seq = 128;
  const int64_t need = 4 * m.parameter_count();
  const hw::HardwareCostModel roomy(hw::load_machine("rtx3090-server", {"host.memory_bytes=" + std::to_string(need + 1)}));
  const SearchResult ok = search_policy(m, roomy, o);
  REQUIRE(ok.found);
  CHECK(ok.best.init_host_bytes == need);
  const hw::HardwareCostModel tight(hw::load_machine("rtx3090-server", {"host.memory_bytes=" + std::to_string(need - 1)}));
  const SearchResult no = search_policy(m, tight, o);
  CHECK_FALSE(no.found);
  CHECK_THAT(no.first_failure, Catch::Contains("initialisation (ddp) does not fit"));
}
