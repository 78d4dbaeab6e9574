// The machine `calibrate --ranks` predicts N-rank runs on (issue 23): the calibration's one-GPU
// machine with N GPUs whose collectives are what the runtime does under mpirun
// (runtime/comm/rank_group.cpp): each collective its own transfer, throttled to --net-GBps of bus
// bandwidth on the collective stream's thread, NOT staged through the rank's copy links. The
// profiled emulated machine says `host_staged: true`, which priced every collective over the h2d
// and d2h links at the copy throttle (0.25 GB/s, 4x the 1 GB/s cap) and made it contend with the
// copies; measured 2-rank FSDP steps had their collectives busy 0.046 s where that predicted 0.116 s.
// When the machine's collectives were measured (`mpirun -np N protwin profile`, provenance
// "measured": runtime/profile/collective_probe.h) their fitted alpha and bus bandwidth are kept;
// otherwise alpha stays the file's and the bus bandwidth is --net-GBps.
#pragma once

#include "hwmodels/machine.h"

namespace protwin::calib {

hw::Machine machine_for_ranks(const hw::Machine& one_gpu, int ranks, double net_gbps);

// A machine file one rank measured while all N ranks measured together (`mpirun -np N protwin
// profile`, as calibrate --ranks takes it) holds that rank's share of the host: its DRAM bandwidth
// and host-pass times are what one rank got with the others streaming beside it. The cost model
// reads host figures as the whole host's and gives each of a host's N ranks 1/N of them (CPU Adam's
// memory bound, casts, host passes), so the share is scaled back to the host: bandwidth x N,
// host-pass ns per element / N. Without it a 2-rank FSDP step's CPU Adam was priced at half the
// bandwidth its rank measured (issue 23, session 18).
nlohmann::json host_from_rank_share(nlohmann::json rank_measured, int ranks);

}  // namespace protwin::calib
