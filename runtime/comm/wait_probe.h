// How much of a host core a rank uses while it waits in a collective for a late peer (issue 23):
// the MPI plugin completes each collective by MPI_Test and a nap until done (20 us, or backing
// off to 250 us with single-copy transfers: sim/distributed/poll_backoff.h), so a waiting rank
// neither frees its core nor spins it. The
// joint two-rank simulation (sim/engine/joint_ranks.h) counts a waiting rank as this many runnable
// threads on the shared cores.
// Runtime header: includes ATen (through rank_group.h).
#pragma once

#include "runtime/comm/rank_group.h"

namespace protwin::rt {

// Rank 0 sleeps `seconds`, then joins an all-gather that every other rank entered at once; each
// waiting rank's thread CPU time over its wall time, `rounds` times. Every rank must call it and
// gets the same value: the median over the rounds of the mean over ranks 1..N-1. 0 with one rank.
double measure_wait_cpu_share(RankGroup& ranks, double seconds = 0.1, int rounds = 3);

}  // namespace protwin::rt
