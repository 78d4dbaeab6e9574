// The order in which one pipeline stage runs its forward and backward passes (Megatron-LM,
// megatron/core/pipeline_parallel/schedules.py).
//
// Non-interleaved 1F1B (v == 1): stage s of p runs min(p-s-1, m) warm-up forwards, then
// alternates one forward and one backward (steady state), then the remaining backwards
// (cool-down). Bubble with equal stage times and free communication: (p-1)/(m+p-1) of the
// pipeline time.
// Interleaved 1F1B (v > 1 model chunks per stage, Narayanan et al. 2021 §2.2): forward step k
// runs chunk (k mod pv) / p on micro-batch (k / pv) p + k mod p; backward steps the same with
// chunks in reverse; warm-up (p-s-1)*2 + (v-1)*p steps (all of them when m == p). Requires m to be
// a multiple of p, as Megatron does. Bubble (p-1)/(vm+p-1).
#pragma once

#include <cstdint>

namespace protwin::sim::parallel {

struct PipeTask {
  bool forward = true;
  int chunk = 0;            // model chunk of this stage (virtual stage = chunk * p + stage)
  int64_t microbatch = 0;
};

// Task `index` (0 <= index < 2 m v) of stage `stage`'s schedule, computed alone (a stage's
// schedule without holding its 2 m v tasks). Does not check m against p (the compiler does).
PipeTask pipeline_task(int stage, int p, int v, int64_t m, int64_t index);

}  // namespace protwin::sim::parallel
