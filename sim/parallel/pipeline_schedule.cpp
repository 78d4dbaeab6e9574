#include "sim/parallel/pipeline_schedule.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::sim {

std::vector<PipeTask> pipeline_order(int stage, int p, int v, int64_t m) {
  PROTWIN_ASSERT(p >= 1 && v >= 1 && m >= 1 && stage >= 0 && stage < p, "bad pipeline shape");
  std::vector<PipeTask> order;
  order.reserve(static_cast<size_t>(2 * m * v));
  if (v == 1) {
    const int64_t warmup = std::min<int64_t>(p - stage - 1, m);
    for (int64_t i = 0; i < warmup; ++i) order.push_back({true, 0, i});
    for (int64_t i = 0; i < m - warmup; ++i) {
      order.push_back({true, 0, warmup + i});
      order.push_back({false, 0, i});
    }
    for (int64_t i = m - warmup; i < m; ++i) order.push_back({false, 0, i});
    return order;
  }
  PROTWIN_CHECK(m % p == 0, "--vpp ", v, ": the interleaved schedule needs the micro-batches (", m,
                ") to be a multiple of PP ", p);
  const int64_t total = m * v, group = static_cast<int64_t>(p) * v;
  auto task = [&](int64_t k, bool forward) {
    int chunk = static_cast<int>((k % group) / p);
    if (!forward) chunk = v - 1 - chunk;
    return PipeTask{forward, chunk, (k / group) * p + k % p};
  };
  int64_t warmup = m == p ? total : std::min<int64_t>(total, (p - stage - 1) * 2 + (v - 1) * p);
  for (int64_t k = 0; k < warmup; ++k) order.push_back(task(k, true));
  for (int64_t i = 0; i < total - warmup; ++i) {
    order.push_back(task(warmup + i, true));
    order.push_back(task(i, false));
  }
  for (int64_t k = total - warmup; k < total; ++k) order.push_back(task(k, false));
  return order;
}

}  // namespace protwin::sim
