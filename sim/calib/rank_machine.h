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

}  // namespace protwin::calib
