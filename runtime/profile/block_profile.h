// Whole blocks of the runtime's model timed as a training step runs them (issue 22): the
// embedding, one decoder layer and the head, forward and backward, each through the same
// functions (runtime/model/transformer.h) and so the same ATen calls, views, copies and gradient
// accumulations as PlanReplayer. The kernel benchmarks (profiler.cpp) time only the kernels the
// workload model lists, as contiguous standalone calls; inside a step the same block also runs
// the bias-gradient sums, the head split/merge copies, at::matmul's copies of strided views,
// linear's transposed and accumulating GEMMs, the residual-gradient adds. Measured on gpt2-tiny:
// docs/RUNTIME.md ("Whole blocks in the profile").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/memory/caching_allocator.h"
#include "runtime/profile/profiler.h"
#include "traces/block_signature.h"
#include "traces/op_profile.h"
#include "traces/plan.h"

namespace protwin::rt {

// The blocks a plan's forward / recompute / backward ops run (traces::block_signature).
std::vector<traces::OpSignature> plan_block_signatures(const traces::Plan& plan);

// One block signature set up to be timed, as the runtime runs it (a one-layer model of the
// signature's shape, its inputs and saved activations from one forward and backward), kept so
// the same block can be timed again later: `protwin interleave --block-probes` times it once
// beside every sweep of steps (issue 22, docs/RUNTIME.md "Blocks timed beside the steps").
class BlockBench {
 public:
  explicit BlockBench(const traces::OpSignature& sig);  // throws protwin::Error as time_block
  ~BlockBench();
  BlockBench(BlockBench&&) noexcept;
  BlockBench(const BlockBench&) = delete;
  BlockBench& operator=(const BlockBench&) = delete;

  const traces::OpSignature& signature() const { return sig_; }
  // As the profile times it (op_timer.h: a warm-up run, then the median of the timed runs).
  traces::OpTimeStats time_median(const ProfileOptions& o);
  // One run in microseconds after the profile's cache flush of `flush_bytes` and the input warmed,
  // without a warm-up run of its own (the caller's process is already warm); stretched by the
  // emulated slowdown as a device op (runtime/memory/speed_throttle.h).
  double time_once_us(int64_t flush_bytes);

 private:
  struct State;
  traces::OpSignature sig_;
  // Every allocation of the block (setup and runs) comes from its own caching allocator, as a
  // step's device ops do: after the first run nothing page-faults. With the process's malloc,
  // glibc sometimes returned a block's buffers to the system between runs (measured in `protwin
  // interleave`: 2 of 7 runs of the gpt2-tiny layer faulted 256-512 pages in again, about 1 %).
  std::unique_ptr<CachingAllocator> alloc_;
  std::unique_ptr<State> s_;
  std::function<void()> run_, hot_;
};

// Times one block signature (fp32, the current ATen thread setting) as time_signature times a
// kernel, but the entry is the median run (op_timer.h: time_runs_median). Throws protwin::Error for a signature that is not a block or a model the runtime refuses.
traces::OpTimeStats time_block(const traces::OpSignature& sig, const ProfileOptions& o);

}  // namespace protwin::rt
