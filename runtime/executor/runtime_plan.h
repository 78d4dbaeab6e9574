// A Plan as the runtime replays it: the plan itself (validated), the model read from
// meta.model_spec (check_runtime_model), the block modes, and the chunk layout mapped onto the
// runtime's parameters.
// Everything the runtime cannot replay is refused here, before any step runs, with the file and
// JSON pointer of the offending field (exit 2 at the CLI).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/memory/chunk_store.h"
#include "runtime/model/runtime_model.h"
#include "traces/plan.h"

namespace protwin::rt {

enum class LayerMode { kNone, kCheckpoint, kSwap };

struct RuntimePlan {
  traces::Plan plan;
  std::string source;              // file name used in messages
  traces::ValidationResult validation;
  ModelSpec model;
  int64_t batch = 0, seq = 0;
  std::vector<LayerMode> layer_modes;  // per decoder layer
  ChunkLayout chunks;
  bool offloads = false;           // has host-side work (CPU Adam or copies)
  int ranks = 1;                   // meta.gpus: one process (mpirun rank) per GPU

  int64_t gpu_capacity() const;
  int64_t gpu_high_water() const;  // validate()'s high-water of pool "gpu"
};

// `ranks`: the processes replaying the plan (mpirun -np); meta.gpus must equal it.
RuntimePlan make_runtime_plan(traces::Plan plan, const std::string& source, int ranks = 1);
RuntimePlan load_runtime_plan(const std::string& path, int ranks = 1);

}  // namespace protwin::rt
