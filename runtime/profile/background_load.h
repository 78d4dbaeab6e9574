// Work the profile runs on a thread of its own beside a timed op, to measure how much slower the
// op runs beside it (profiler.cpp, "contention"): a local loop (copy workers, CPU Adam), or this
// rank's collectives (issue 23), which every rank must start and stop together.
// Runtime header: includes ATen (through rank_group.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include <ATen/core/Tensor.h>

#include "runtime/comm/rank_group.h"

namespace protwin::rt {

class BackgroundLoad {
 public:
  virtual ~BackgroundLoad() = default;
  // Ends the work after its current run (for collectives: once every rank has asked) and joins.
  virtual void stop() = 0;
  // Runs finished so far.
  long runs() const { return runs_.load(); }
  // CPU seconds of the load's thread (0 until stop() has returned).
  double cpu_s() const { return cpu_s_; }
  // MPI completion tests the load's collectives made (0 for a local loop; after stop()).
  long long tests() const { return tests_; }

 protected:
  std::atomic<long> runs_{0};
  double cpu_s_ = 0;     // written by the thread as it ends, read after the join
  long long tests_ = 0;  // likewise
};

// `work` run back to back until stopped.
class LocalLoad : public BackgroundLoad {
 public:
  explicit LocalLoad(std::function<void()> work);
  ~LocalLoad() override { stop(); }
  void stop() override;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// This rank's collectives as the executor's collective stream calls them (RankGroup's all-gather,
// then reduce-scatter of one `bytes` buffer, under the group's --net-GBps throttle), back to back
// until every rank has called stop(): each run starts with an all-gather of the ranks' stop flags,
// so all ranks leave after the same run and none is left waiting in a collective. Collective: every
// rank of the group must start one, with the same bytes; no other thread of the process may call
// the group until stop() returns (MPI_THREAD_SERIALIZED).
class CollectiveLoad : public BackgroundLoad {
 public:
  CollectiveLoad(RankGroup& ranks, int64_t bytes);
  ~CollectiveLoad() override { stop(); }
  void stop() override;

 private:
  at::Tensor buffer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace protwin::rt
