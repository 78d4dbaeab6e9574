#include "sim/parallel/compiler/pipeline_schedule.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::sim::parallel {

PipeTask pipeline_task(int stage, int p, int v, int64_t m, int64_t index) {
  PROTWIN_ASSERT(p >= 1 && v >= 1 && m >= 1 && stage >= 0 && stage < p && index >= 0 && index < 2 * m * v,
                 "bad pipeline task");
  // Warm-up forwards, then pairs (forward, backward), then cool-down backwards; k-th forward or
  // backward step -> its task.
  const int64_t total = m * v, group = static_cast<int64_t>(p) * v;
  auto task = [&](int64_t k, bool forward) {
    if (v == 1) return PipeTask{forward, 0, k};
    int chunk = static_cast<int>((k % group) / p);
    if (!forward) chunk = v - 1 - chunk;
    return PipeTask{forward, chunk, (k / group) * p + k % p};
  };
  const int64_t warmup = v == 1 ? std::min<int64_t>(p - stage - 1, m)
                         : m == p ? total
                                  : std::min<int64_t>(total, (p - stage - 1) * 2 + (v - 1) * p);
  if (index < warmup) return task(index, true);
  const int64_t r = index - warmup, steady = total - warmup;
  if (r < 2 * steady) return r % 2 == 0 ? task(warmup + r / 2, true) : task(r / 2, false);
  return task(steady + (r - 2 * steady), false);
}

}  // namespace protwin::sim::parallel
