// Where a plan keeps each chunk and what it does with each decoder layer's activations, read from
// its chunks and ops, not from meta.knobs / meta.layer_modes (which describe the policy that made
// it): the runtime (runtime/executor/runtime_plan.cpp) and the simulator's memory model
// (sim/offload/analytic/runtime_memory.cpp) decide it the same way, and a plan stripped of its meta replays
// and is predicted as before.
#pragma once

#include <string>
#include <vector>

#include "traces/plan.h"

namespace protwin::traces {

struct ChunkPlacement {
  bool resident = true;          // on the device all iteration (else it visits in a buffer)
  bool device_optimizer = true;  // its optimizer step runs on the device (else on the host)
};

// Per chunk: its "resident" and "optimizer" fields; a chunk without them is refused. Errors name
// `source:/chunks/i`.
std::vector<ChunkPlacement> chunk_placement(const Plan& plan, const std::string& source);

enum class LayerKeep { kAll, kInput, kSwapped };  // saved activations kept / checkpointed / swapped out

// Per decoder layer 1..`layers` (index 0 is block 1): checkpointed when a recompute op runs it,
// swapped when a d2h copy reads one of its activation tensors. Refuses (exit 2, the op) such an op
// outside the decoder layers and a layer that is both.
std::vector<LayerKeep> layer_keeps(const Plan& plan, int layers);

}  // namespace protwin::traces
