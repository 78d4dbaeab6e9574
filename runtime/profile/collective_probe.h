// The runtime's collectives timed as the executor runs them (issue 23): RankGroup's all-gather,
// reduce-scatter, all-reduce and broadcast (runtime/comm/rank_group.h: MPI calls completed by
// polling with naps (sim/distributed/poll_backoff.h), the rank-order sum, the --net-GBps throttle), called by every rank of
// `mpirun -np N protwin profile` at once. The rows feed fit_collectives (collective_fit.h), whose
// alpha and bus bandwidth the N-rank machine then prices collectives with.
// Runtime header: includes ATen (through rank_group.h).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/comm/rank_group.h"
#include "runtime/profile/collective_fit.h"

namespace protwin::rt {

// Buffer sizes the probe times by default: 16 KiB to 4 MiB of fp32, the tiny models' chunks.
std::vector<int64_t> default_collective_probe_bytes();

// Every kind at every buffer size, `reps` calls each (every rank starts each call together, after
// an all-gather of one value); one row per kind and size with the median time on this rank.
// Collective: every rank of the group must call it with the same arguments. Empty with one rank.
std::vector<CollectiveRow> probe_collectives(RankGroup& ranks, const std::vector<int64_t>& buffer_bytes, int reps);

}  // namespace protwin::rt
