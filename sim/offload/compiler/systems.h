// The systems protwin compares, each a policy family: fixed behaviour switches (what the real
// system does, with its source) plus the knobs it lets a user tune (REFERENCE §2).
#pragma once

#include <string>
#include <vector>

#include "sim/offload/compiler/knobs.h"
#include "sim/workload/workload.h"

namespace protwin::sim::offload {

struct SystemInfo {
  std::string name;
  std::string description;
  std::string source;  // where the encoded behaviour is documented
};

// protrain, deepspeed, zero-offload, colossalai, fsdp, ddp.
const std::vector<SystemInfo>& systems();
// Unknown names are a user error listing the known ones.
const SystemInfo& find_system(const std::string& name);
// nullptr for an unknown name.
const SystemInfo* lookup_system(const std::string& name);
// The names, in order, and joined with ", " for messages.
std::vector<std::string> system_names();
std::string known_systems();

// The system's fixed switches with neutral knobs.
OffloadKnobs base_knobs(const std::string& system);

// The knob settings the search visits for a system, for a model with `n_chunks` chunks and
// `layers` decoder layers. ProTrain's activation knobs are left to the search (it picks the
// fewest checkpointed layers that fit for each n_swap); other systems checkpoint all or none.
struct KnobSpace {
  std::vector<int> n_persist, n_buffer, n_swap;
  std::vector<int> n_checkpoint;   // empty: the search chooses (ProTrain)
};
KnobSpace knob_space(const std::string& system, int n_chunks, int layers, int min_buffers);

}  // namespace protwin::sim::offload
