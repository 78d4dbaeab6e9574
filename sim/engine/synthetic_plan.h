// A synthetic Plan for engine benchmarks and determinism tests: n_ops ops over n_streams streams
// with cross-stream dependencies and memory effects, fully determined by the seed.
//
// Streams are named compute, h2d, d2h, cpu_optim, collective, then s5, s6, ...; each op picks its
// stream at random, depends (with probability 3/4) on a random one of the 8 most recent ops of
// another stream, and takes a temporary buffer for its duration (+b at start, -b at end) in the
// pool of its side (gpu for compute/h2d/collective, pinned otherwise). Pool capacities cover the
// worst case, so the plan always fits. h2d/d2h ops move bytes over PCIe links in synthetic_rates().
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "traces/plan.h"

namespace protwin::sim {

traces::Plan make_synthetic_plan(int64_t n_ops, int n_streams, uint64_t seed);

// Rates (protwin.rates JSON) for the synthetic plan's streams: a made-up GPU and PCIe link, not a
// real machine.
nlohmann::json synthetic_rates();

}  // namespace protwin::sim
