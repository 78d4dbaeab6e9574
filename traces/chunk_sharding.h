// Which chunks of a data-parallel plan have their optimizer state sharded on the device
// (ProTrain's and Colossal-AI's persistent chunks on N ranks: the full parameters and gradient on
// every GPU, Adam m and v of 1/N of the chunk; `reduce_scatter` leaves this rank's mean gradient
// shard, `adam_device` updates that shard, `all_gather` of the updated shard makes the parameters
// whole again). Read from the ops, so the runtime (ChunkStore) and the simulator's memory model
// (sim/offload/analytic/runtime_memory) decide it the same way.
#pragma once

#include <string>
#include <vector>

#include "traces/plan.h"

namespace protwin::traces {

// Per chunk: meta.gpus > 1 and the plan has both an adam_device and a reduce_scatter of it.
std::vector<bool> device_sharded_chunks(const Plan& plan);

// Refuses (exit 2, `source:/ops/i` of the adam_device) a sharded chunk whose updated shard is never
// gathered: no all_gather of the chunk depends on its adam_device, so the other ranks would go on
// with stale parameters.
void check_sharded_chunks_gathered(const Plan& plan, const std::string& source);

}  // namespace protwin::traces
