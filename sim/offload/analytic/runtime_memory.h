// The device memory protwin's LibTorch runtime allocates when it replays a plan (issue 23): the
// plan's ops in the simulated schedule, each with the tensors the runtime really makes for it
// (sim/workload/runtime_tensors.h: every output, temporary and saved activation of the explicit
// forward/backward; chunk buffers, gradient buffers, swap copies, collective scratch as
// runtime/memory/chunk_store.cpp and activation_store.cpp make them), replayed through the CUDA
// caching allocator's model (traces/block_allocator.h). The result predicts the runtime's
// measured `peak_device_bytes` (allocated high water) and `peak_device_reserved_bytes`; the
// plan's own pool curve (its bytes) stays a separate figure.
//
// When: a compute op's tensor events are spread evenly over its simulated duration (its kernels
// run one after another), a copy's or collective's allocations happen at its start and its frees
// at its end; at equal times ends go first. The step is replayed twice and the second one is
// measured, as the runtime's later steps start with the first step's segments cached.
// Scope: fp32 plans of the runtime's gpt2 and llama families (what `protwin train` replays).
#pragma once

#include <cstdint>

#include "sim/workload/model_spec.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::sim::offload {

struct RuntimeMemory {
  int64_t allocated_peak_bytes = 0;  // as torch.cuda.max_memory_allocated
  int64_t reserved_peak_bytes = 0;   // segments, as torch.cuda.max_memory_reserved
  int64_t states_bytes = 0;          // persistent chunk states allocated before the step
  int peak_op = -1;                  // the op during which the allocated peak was reached
};

// `schedule`: the simulated (or measured) Report of `plan`, for op start/end times. Errors name
// the plan's meta field or op it cannot follow.
RuntimeMemory predict_runtime_memory(const traces::Plan& plan, const traces::Report& schedule);

}  // namespace protwin::sim::offload
