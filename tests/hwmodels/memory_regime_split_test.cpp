// Memory-bound kernels beyond a table's largest (KernelTable::beyond_largest, issue #18): a held-out
// split of every measured table's memory-bound kernels. Per group (elementwise, layernorm/rmsnorm,
// softmax, swiglu, rope), the kernels of the group's top two octaves of bytes are held out and
// predicted from the others: with the correction of the remaining largest kernels (extrapolated),
// and with the shape-aware model alone (what priced them before). No constant is chosen here: the
// rule has none. Oracle: the tables' measured kernel times (vidur, NeuSight; hwmodels/kernel_tables).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/kernel_table.h"
#include "traces/kernel_kinds.h"
#include "traces/op_profile.h"

using namespace protwin;
using namespace protwin::hw;

namespace {

bool memory_bound(const traces::OpProfileEntry& e) {
  return e.bytes && *e.bytes > 0 &&
         (traces::is_memory_bound_kind(e.sig.kind) || e.sig.kind.rfind("elementwise.", 0) == 0);
}

struct Errors {
  double extrapolated = 0, model = 0;
  int n = 0;
};

// Mean |log(predicted / measured)| over the held-out kernels of `table` priced on `machine`.
Errors held_out_errors(const std::string& machine, const std::string& table) {
  Machine m = load_machine(machine);
  m.kernel_tables.enabled = false;
  const HardwareCostModel model(m);
  const traces::OpProfile& t = kernel_table(table);
  std::map<std::string, double> largest;  // per kind: the largest bytes
  for (const auto& e : t.entries())
    if (memory_bound(e)) largest[e.sig.kind] = std::max(largest[e.sig.kind], *e.bytes);
  const auto held_out = [&](const traces::OpProfileEntry& e) { return *e.bytes > largest[e.sig.kind] / 4; };
  traces::OpProfile train(t.device(), "measured", "split");
  for (const auto& e : t.entries())
    if (memory_bound(e) && !held_out(e)) train.add(e);
  const auto fn = [&model](const traces::OpSignature& sig, double bytes) { return model.model_seconds(sig, bytes); };
  const KernelTable tables({&train}, fn);
  Errors err;
  for (const auto& e : t.entries()) {
    if (!memory_bound(e) || !held_out(e)) continue;
    const double bytes = *e.bytes, alone = model.model_seconds(e.sig, bytes);
    const auto c = tables.correction(e.sig, bytes);
    if (c && !c->extrapolated) continue;  // within an octave of a training kernel: interpolated
    REQUIRE(c);  // beyond the training kernels of its own group
    err.extrapolated += std::fabs(std::log(alone * c->ratio / e.mean_seconds()));
    err.model += std::fabs(std::log(alone / e.mean_seconds()));
    ++err.n;
  }
  if (err.n > 0) {
    err.extrapolated /= err.n;
    err.model /= err.n;
  }
  return err;
}

}  // namespace

// Measured here (mean |log error|, extrapolated / model alone): vidur-h100 0.114 / 0.653 (14
// kernels), vidur-a100 0.114 / 0.685 (14; RMSNorm, SwiGLU and RoPE are several eager kernels each,
// which the one-pass model does not know), neusight-a100-pcie-40gb 0.047 / 0.089 (23),
// neusight-a100-80g-pcie 0.058 / 0.053 (24: the one table where the model alone is as good).
TEST_CASE("memory-bound kernels beyond a table's largest take its largest kernels' correction",
          "[hwmodels][kernel_table]") {
  double extrapolated = 0, alone = 0;
  int n = 0;
  for (const auto& [machine, table] : std::vector<std::pair<std::string, std::string>>{
           {"hgx-h100", "vidur-h100"},
           {"dgx-a100", "vidur-a100"},
           {"a100-80g-pcie-server", "neusight-a100-80g-pcie"},
           {"a100-40g-pcie-server", "neusight-a100-pcie-40gb"}}) {
    const Errors e = held_out_errors(machine, table);
    INFO(table << " on " << machine << ": " << e.n << " held-out kernels, mean |log error| extrapolated "
               << e.extrapolated << ", model alone " << e.model);
    CHECK(e.n >= 10);
    CHECK(e.extrapolated < 0.12);  // every table: within about 12 % on average
    extrapolated += e.extrapolated * e.n;
    alone += e.model * e.n;
    n += e.n;
  }
  CHECK(extrapolated / n < 0.5 * alone / n);  // pooled over the tables' held-out kernels
}
