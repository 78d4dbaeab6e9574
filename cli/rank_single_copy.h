// Whether Open MPI's ranks on this host may move large messages in one copy (CMA:
// process_vm_readv of the peer's memory), which containers that forbid ptrace deny (issue 23).
// calibrate --ranks uses single-copy transfers when permitted: then a rank's collective is a few
// handshakes and its thread backs off while it waits (sim/distributed/poll_backoff.h); without
// them every 32 KiB fragment needs a completion test on both ranks, and the thread keeps waking
// every 20 us beside the rank's compute.
#pragma once

namespace protwin::cli {

// Reads a word of a forked child with process_vm_readv: true when that works (as Open MPI's CMA
// check does between two ranks of one user).
bool single_copy_permitted();

}  // namespace protwin::cli
