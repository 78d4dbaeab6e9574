// Contention between streams that share hardware the simulator does not model as a link.
//
// On the emulated device, "GPU" compute, the copy workers and CPU Adam all run on the same host
// cores and memory: `protwin profile` measures how much slower a GEMM runs beside the copy workers
// or beside CPU Adam, and CPU Adam beside compute (recorded in the op profile's provenance,
// "contention"). A GPU has none of that (DMA engines copy, the CPU updates), so GPU machines carry
// no such rules; its collectives take SMs from its compute instead (collective_sm_rules).
// The engine shares the cores as it runs (PlanSimulator with rules): while an op of a rule's
// `beside` streams runs, an op of its `stream` does its stream-phase work `slowdown` times slower
// (several rules at once: 1 + the sum of their slowdown - 1), so an op that is half covered is
// slowed over that half only, and the schedule and the slowdowns come out of one simulation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hwmodels/cost_model.h"

namespace protwin::sim {

// An op on `stream` runs `slowdown` times slower while any op of `beside` runs (a measured
// profile's rules: hw::contention_rules_from_profile, held by its cost model).
using hw::ContentionRule;

// A host's cores shared by the CPU threads of several streams (processor sharing): while n threads
// are runnable on `cores` cores and n > cores, every thread runs at cores / n of its speed. Counted:
// each running op of a `threads` stream (slowed) or of a `load_threads` stream (loads the cores,
// keeps its own time), and each stream waiting in a rendezvous: from the end of its kArrive op to
// the start of its next op, `wait_threads` (sim/engine/joint_ranks.h: a rank polling in MPI).
struct SharedCores {
  int cores = 0;  // 0: not shared
  std::map<std::string, double> threads, load_threads;
  double wait_threads = 0;
};

// A GPU's collectives and its compute share the SMs: NCCL runs one CTA per ring channel, and a
// GEMM's tiles leave no room beside them on an SM, so while a collective runs a compute kernel
// has sms - channels SMs (torch 2.1's NCCL 2.18: 24 channels on an 8-GPU NVSwitch node, of 108
// A100 or 132 H100 SMs). One rule per rank: its `compute` stream, `sms / (sms - channels)` times
// slower beside its streams whose role (the name after the last '.') is one of `collective_roles`
// (same host, traces::host_of_stream). None when channels is 0 (unknown).
std::vector<ContentionRule> collective_sm_rules(const std::vector<std::string>& streams,
                                                const std::vector<std::string>& collective_roles, int sms,
                                                int channels);

}  // namespace protwin::sim
