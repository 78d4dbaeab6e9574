// The ranks replaying one N-GPU plan (`mpirun -np N protwin train`): one process and one emulated
// device per rank, the plan's collectives over MPI (the plugin libprotwin_mpi.so, opened only under
// mpirun: traces/mpi_plugin.h). Without mpirun the group has one rank and every collective is a
// no-op.
//
// Sharding (ZeRO-3 / FSDP): a chunk of n elements is cut into N shards of ceil(n / N) elements
// (the last ones shorter or empty); rank r owns shard r (shard()).
// Reductions are means in a fixed order: every rank sends each peer that peer's shard (one
// all-to-all, the bytes of a ring reduce-scatter) and sums what it receives in rank order 0..N-1,
// so reruns are bitwise equal whatever MPI's algorithm.
// Calls must be made in the same order on every rank, from one thread at a time (the plan's single
// collective stream during a step, the main thread between steps).
// Runtime header: includes ATen.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

namespace protwin::rt {

struct Shard {
  int64_t begin = 0, count = 0;
};

class RankGroup {
 public:
  // This process's group: under mpirun, MPI is started on first use (MPI_THREAD_SERIALIZED) and
  // finalised at exit; otherwise one rank.
  static RankGroup& world();
  // One rank, no MPI (tests, and the world without mpirun).
  RankGroup() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank `r`'s shard of n elements.
  Shard shard(int64_t n, int r) const;
  Shard shard(int64_t n) const { return shard(n, rank_); }

  // Caps each collective's bus bandwidth (bytes a rank sends and receives per second, as NCCL's
  // busbw: (N-1)/N of the buffer for all-gather and reduce-scatter, twice that for all-reduce) at
  // `gbps` GB/s by sleeping after it; 0 = uncapped.
  void set_net_gbps(double gbps);
  // Test hook: a synthetic fixed cost, a sleep of `us` microseconds before each all-gather,
  // reduce-scatter and broadcast (an all-reduce is one of each of the first two, so it pays twice),
  // outside the throttle's window. The collective probe's test must find it in the fitted alpha.
  void set_extra_fixed_cost_us(double us);

  // In place on a contiguous 1-D fp32 tensor of a chunk's n elements:
  // all_gather: every rank's shard filled from its owner.
  void all_gather(const at::Tensor& full);
  // reduce_scatter_mean: this rank's shard = the mean over ranks of their tensors' shard (the rest
  // is left as it was).
  void reduce_scatter_mean(const at::Tensor& full);
  // all_reduce_mean: every element = the mean over ranks (reduce_scatter_mean, then all_gather).
  void all_reduce_mean(const at::Tensor& full);
  // broadcast: every rank's tensor = rank `root`'s.
  void broadcast(const at::Tensor& full, int root);
  // One value from every rank, in rank order.
  std::vector<double> all_gather(double mine);
  // Every rank's series of values, in rank order ([rank][i]); every rank's series has the same length.
  std::vector<std::vector<double>> all_gather(const std::vector<double>& mine);
  // Whether MPI moves large messages in one copy (Open MPI's CMA), so a waiting rank backs off its
  // completion tests from 20 us to 250 us naps (sim/distributed/poll_backoff.h); false with one rank.
  bool single_copy() const;
  // MPI_Test calls this process's collectives made so far (the collective thread's wake-ups).
  long long completion_tests() const;
  // Ends every rank with exit code `code` (MPI_Abort): a rank that failed mid-step must not leave
  // its peers waiting in a collective. Returns only with one rank (then it does nothing).
  void abort_all(int code) const;

 private:
  void throttle(double bus_bytes, int64_t start_ns) const;
  void extra_fixed_cost() const;

  int rank_ = 0, size_ = 1;
  std::unique_ptr<float[]> staging_;  // reduce_scatter_mean's receive buffer, grown as needed
  size_t staging_capacity_ = 0;
  double net_gbps_ = 0;
  double extra_fixed_cost_us_ = 0;
};

// Runs `body`; when it throws protwin::Error on N ranks, prints "<command>: error: rank R: ..." and
// ends every rank (abort_all, exit 2 for a user error): its peers may wait in a collective for it.
// With one rank the error propagates as usual.
void run_or_abort_all(RankGroup& ranks, const char* command, const std::function<void()>& body);

// Host cores this rank may use: the machine's cores shared evenly by the ranks on this node
// (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1.
int cores_per_rank(int host_cores);

}  // namespace protwin::rt
