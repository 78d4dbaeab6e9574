// Whole blocks timed once each after every step, as the profile times them (issue 22: `protwin
// interleave --block-probes`; issue 23: `protwin train --block-probes` on every rank of an N-GPU
// plan): on this machine a block's time drifts by 5-10 % within tens of seconds while the GEMM probe
// does not follow it, so the blocks are sampled over the same stretch of time as the steps
// (docs/RUNTIME.md, "Blocks timed beside the steps"). Moved out of interleaved.cpp so that the
// interleaved loop and the training loop share it.
// Runtime header: includes ATen (via block_profile.h).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/comm/rank_group.h"
#include "runtime/memory/thread_split.h"
#include "runtime/profile/block_profile.h"
#include "traces/op_signature.h"

namespace protwin::rt {

struct BlockProbeSeries {
  traces::OpSignature sig;
  std::vector<double> us;  // one run after every step, in the order the steps ran
};

class StepBlockProbes {
 public:
  // Sets every block up at `split` (runtime/profile/block_profile.h: BlockBench, one untimed
  // warm-up run each). `flush_bytes`: the cache flush before each run, as ProfileOptions::flush_bytes.
  // `ranks` (null: one rank): on several ranks every block run starts on all of them together, as
  // the rank profile times its ops, so a rank's block runs beside its peer's, as in a step.
  StepBlockProbes(const std::vector<traces::OpSignature>& sigs, int64_t flush_bytes, const ThreadSplit& split,
                  RankGroup* ranks);
  // One run of every block, at the split given above (the caller applies its own afterwards).
  void after_step();
  const std::vector<BlockProbeSeries>& series() const { return series_; }

 private:
  std::vector<BlockBench> benches_;
  std::vector<BlockProbeSeries> series_;
  int64_t flush_bytes_;
  ThreadSplit split_;
  RankGroup* ranks_;
};

}  // namespace protwin::rt
