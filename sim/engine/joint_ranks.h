// The joint simulation of the ranks of one N-GPU plan (issue 23): one engine runs every rank's
// copy of the plan, each op priced by its own rank's cost model (a rank at its own speed), so the
// ranks drift apart and meet again where they really do:
//  - Streams are per rank ("rank<r>.<stream>"; each rank has its own host-dispatch thread, see
//    traces::host_of_stream) and so are links ("rank<r>.<link>": the runtime throttles every
//    rank's copies and collectives on its own).
//  - A collective is a rendezvous: rank r's copy first "arrives" (its dependencies and its stream
//    are done), then the transfer starts on every rank once the last rank has arrived. The time
//    between is the rank's wait for its peers.
//  - The host's cores are shared by all ranks' CPU threads (processor sharing): while n threads
//    are runnable on C cores and n > C, each runs at C / n of its speed. Runnable: each busy op of
//    a CPU stream (compute, cpu_optim: their thread counts), and each rank waiting in a collective
//    (the MPI plugin polls with MPI_Test and naps, sim/distributed/poll_backoff.h: a fraction of a
//    core, which the runtime measures, runtime/comm/wait_probe.h). The copy workers sleep at the
//    link throttle and are not counted. The engine shares the cores as it runs (SharedCores in
//    contention.h): an op's end moves whenever the runnable count changes.
// Memory is not simulated here (the per-rank prediction is the single-rank simulation's).
#pragma once

#include <vector>

#include "hwmodels/cost_model.h"
#include "sim/engine/contention.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::sim {

struct JointRanks {
  traces::Report report;          // the joint schedule (streams "rank<r>.<stream>")
  double iteration_s = 0;         // the last op's end over all ranks
  std::vector<double> rank_s;     // each rank's last op's end
  std::vector<double> wait_s;     // each rank's time waiting for its peers in collectives
  std::vector<double> compute_s;  // each rank's busy time on its compute stream
};

// `ranks`: one cost model per rank (at least one), each pricing `plan` as that rank runs it.
// `cores`: the host's, shared by every rank's threads, its streams named as in `plan` (each rank's
// copy counts): e.g. threads compute and cpu_optim, load_threads a rank's collective stream (its
// MPI copies, the sum, its polling, whose time the collective probe took with every rank's at once).
JointRanks simulate_joint_ranks(const traces::Plan& plan, const std::vector<const hw::CostModel*>& ranks,
                                const SharedCores& cores);

}  // namespace protwin::sim
