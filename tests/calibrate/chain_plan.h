// A plan of `n` compute ops on one stream, each after the one before and each of `flops`: its
// simulated iteration is the ops' sum, the oracle of closed-form cost tests.
#pragma once

#include <cstdint>

#include "traces/plan.h"

namespace protwin::testing {

inline traces::Plan compute_chain(int n, double flops) {
  traces::Plan plan;
  plan.pools = {{"gpu", Bytes(int64_t{1} << 30), Bytes(0)}};
  plan.streams = {{"compute", {}}};
  for (int i = 0; i < n; ++i) {
    traces::Op op;
    op.id = i;
    op.kind = traces::OpKind::kForward;
    op.stream = "compute";
    op.work.flops = flops;
    if (i > 0) op.deps = {i - 1};
    plan.ops.push_back(op);
  }
  return plan;
}

}  // namespace protwin::testing
