// Whole blocks of the runtime's model timed as a training step runs them (issue 22): the
// embedding, one decoder layer and the head, forward and backward, each through the same
// functions (runtime/model/transformer.h) and so the same ATen calls, views, copies and gradient
// accumulations as PlanReplayer. The kernel benchmarks (profiler.cpp) time only the kernels the
// workload model lists, as contiguous standalone calls; inside a step the same block also runs
// the bias-gradient sums, the head split/merge copies, at::matmul's copies of strided views,
// linear's transposed and accumulating GEMMs, the residual-gradient adds. Measured on gpt2-tiny:
// docs/RUNTIME.md ("Whole blocks in the profile").
#pragma once

#include <vector>

#include "runtime/profile/profiler.h"
#include "traces/block_signature.h"
#include "traces/op_profile.h"
#include "traces/plan.h"

namespace protwin::rt {

// The blocks a plan's forward / recompute / backward ops run (traces::block_signature).
std::vector<traces::OpSignature> plan_block_signatures(const traces::Plan& plan);

// Times one block signature (fp32, the current ATen thread setting) as time_signature times a
// kernel, but the entry is the median run (op_timer.h: time_runs_median). Throws protwin::Error for a signature that is not a block or a model the runtime refuses.
traces::OpTimeStats time_block(const traces::OpSignature& sig, const ProfileOptions& o);

}  // namespace protwin::rt
