#include "runtime/comm/rank_group.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <ATen/ATen.h>

// The plugin's C interface only (the runtime does not link protwin_sim or libmpi).
#include "sim/distributed/mpi_transport.h"
#include "traces/error.h"
#include "traces/mpi_plugin.h"

namespace protwin::rt {

namespace {

struct Plugin {
  decltype(&protwin_mpi_allgatherv_f32) allgatherv = nullptr;
  decltype(&protwin_mpi_alltoallv_f32) alltoallv = nullptr;
  decltype(&protwin_mpi_bcast_f32) bcast = nullptr;
  decltype(&protwin_mpi_allgather_f64) allgather_f64 = nullptr;
  decltype(&protwin_mpi_abort) abort = nullptr;
  decltype(&protwin_mpi_finalize) finalize = nullptr;
  decltype(&protwin_mpi_single_copy) single_copy = nullptr;
  decltype(&protwin_mpi_tests) tests = nullptr;
};
Plugin g_mpi;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int as_count(int64_t n) {
  PROTWIN_CHECK(n >= 0 && n < INT_MAX, "mpirun: a collective of ", n,
                " elements is more than one MPI call carries (2^31 - 1)");
  return static_cast<int>(n);
}

void check(int rc, const char* what) { PROTWIN_CHECK(rc == 0, "mpirun: ", what, " failed (MPI error)"); }

void check_tensor(const at::Tensor& t) {
  PROTWIN_ASSERT(t.dim() == 1 && t.is_contiguous() && t.scalar_type() == at::kFloat,
                 "collectives take contiguous 1-D fp32 tensors");
}

}  // namespace

RankGroup& RankGroup::world() {
  static RankGroup* group = [] {
    auto* g = new RankGroup();
    if (!traces::launched_by_mpirun()) return g;
    void* lib = traces::open_mpi_plugin();
    using traces::mpi_plugin_function;
    const auto init = mpi_plugin_function<decltype(&protwin_mpi_init_serialized)>(lib, "protwin_mpi_init_serialized");
    g_mpi.allgatherv = mpi_plugin_function<decltype(&protwin_mpi_allgatherv_f32)>(lib, "protwin_mpi_allgatherv_f32");
    g_mpi.alltoallv = mpi_plugin_function<decltype(&protwin_mpi_alltoallv_f32)>(lib, "protwin_mpi_alltoallv_f32");
    g_mpi.bcast = mpi_plugin_function<decltype(&protwin_mpi_bcast_f32)>(lib, "protwin_mpi_bcast_f32");
    g_mpi.allgather_f64 = mpi_plugin_function<decltype(&protwin_mpi_allgather_f64)>(lib, "protwin_mpi_allgather_f64");
    g_mpi.abort = mpi_plugin_function<decltype(&protwin_mpi_abort)>(lib, "protwin_mpi_abort");
    g_mpi.finalize = mpi_plugin_function<decltype(&protwin_mpi_finalize)>(lib, "protwin_mpi_finalize");
    g_mpi.single_copy = mpi_plugin_function<decltype(&protwin_mpi_single_copy)>(lib, "protwin_mpi_single_copy");
    g_mpi.tests = mpi_plugin_function<decltype(&protwin_mpi_tests)>(lib, "protwin_mpi_tests");
    const int rc = init(&g->rank_, &g->size_);
    PROTWIN_CHECK(rc == 0, "mpirun: MPI_Init_thread failed", rc == 2 ? " (this MPI has no MPI_THREAD_SERIALIZED)" : "");
    std::atexit([] { g_mpi.finalize(); });
    return g;
  }();
  return *group;
}

Shard RankGroup::shard(int64_t n, int r) const {
  const int64_t per = (n + size_ - 1) / size_;
  Shard s;
  s.begin = std::min(n, per * r);
  s.count = std::min(n, s.begin + per) - s.begin;
  return s;
}

void RankGroup::set_net_gbps(double gbps) { net_gbps_ = gbps; }

void RankGroup::set_extra_fixed_cost_us(double us) { extra_fixed_cost_us_ = us; }

void RankGroup::extra_fixed_cost() const {
  if (extra_fixed_cost_us_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(extra_fixed_cost_us_));
}

void RankGroup::throttle(double bus_bytes, int64_t start_ns) const {
  if (net_gbps_ <= 0) return;
  const int64_t due = start_ns + static_cast<int64_t>(bus_bytes / net_gbps_);  // 1 GB/s = 1 byte/ns
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(0, due - now_ns())));
}

void RankGroup::all_gather(const at::Tensor& full) {
  check_tensor(full);
  if (size_ == 1) return;
  extra_fixed_cost();
  const int64_t t0 = now_ns();
  std::vector<int> counts, displs;
  for (int r = 0; r < size_; ++r) {
    const Shard s = shard(full.numel(), r);
    counts.push_back(as_count(s.count));
    displs.push_back(as_count(s.begin));
  }
  check(g_mpi.allgatherv(full.data_ptr<float>(), counts.data(), displs.data()), "all-gather");
  throttle(4.0 * static_cast<double>(full.numel()) * (size_ - 1) / size_, t0);
}

void RankGroup::reduce_scatter_mean(const at::Tensor& full) {
  check_tensor(full);
  if (size_ == 1) return;
  extra_fixed_cost();
  const int64_t t0 = now_ns();
  const Shard mine = shard(full.numel());
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  for (int r = 0; r < size_; ++r) {
    const Shard s = shard(full.numel(), r);
    send_counts.push_back(as_count(s.count));
    send_displs.push_back(as_count(s.begin));
    recv_counts.push_back(as_count(mine.count));
    recv_displs.push_back(as_count(mine.count * r));
  }
  // The receive buffer is the communicator's own staging memory, kept from call to call (as NCCL's
  // channel buffers, allocated once, outside the caching allocator), and the sum is taken in place
  // in this rank's shard: a reduce-scatter adds nothing to the device's allocated bytes, so a rank
  // waiting for a late peer holds no more device memory than a punctual one.
  const size_t need = static_cast<size_t>(mine.count * size_);
  if (staging_capacity_ < need) {
    staging_.reset(new float[need]);  // not zeroed: the all-to-all fills what is read
    staging_capacity_ = need;
  }
  check(g_mpi.alltoallv(full.data_ptr<float>(), send_counts.data(), send_displs.data(), staging_.get(),
                        recv_counts.data(), recv_displs.data()),
        "reduce-scatter");
  const at::Tensor received = at::from_blob(staging_.get(), {mine.count * size_}, full.options().device(at::kCPU));
  at::Tensor out = full.narrow(0, mine.begin, mine.count);
  out.copy_(received.narrow(0, 0, mine.count));
  for (int r = 1; r < size_; ++r) out.add_(received.narrow(0, mine.count * r, mine.count));
  out.div_(static_cast<double>(size_));
  throttle(4.0 * static_cast<double>(full.numel()) * (size_ - 1) / size_, t0);
}

void RankGroup::all_reduce_mean(const at::Tensor& full) {
  reduce_scatter_mean(full);
  all_gather(full);
}

void RankGroup::broadcast(const at::Tensor& full, int root) {
  check_tensor(full);
  if (size_ == 1) return;
  extra_fixed_cost();
  const int64_t t0 = now_ns();
  check(g_mpi.bcast(full.data_ptr<float>(), as_count(full.numel()), root), "broadcast");
  throttle(4.0 * static_cast<double>(full.numel()), t0);
}

std::vector<double> RankGroup::all_gather(double mine) {
  std::vector<double> all(static_cast<size_t>(size_), mine);
  if (size_ > 1) check(g_mpi.allgather_f64(mine, all.data()), "all-gather of a value");
  return all;
}

std::vector<std::vector<double>> RankGroup::all_gather(const std::vector<double>& mine) {
  std::vector<std::vector<double>> out(static_cast<size_t>(size_));
  for (double v : mine) {
    const std::vector<double> all = all_gather(v);
    for (size_t k = 0; k < all.size(); ++k) out[k].push_back(all[k]);
  }
  return out;
}

bool RankGroup::single_copy() const { return size_ > 1 && g_mpi.single_copy() != 0; }

long long RankGroup::completion_tests() const { return size_ > 1 ? g_mpi.tests() : 0; }

void RankGroup::abort_all(int code) const {
  if (size_ > 1) g_mpi.abort(code);
}

void run_or_abort_all(RankGroup& ranks, const char* command, const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    if (ranks.size() == 1) throw;
    std::fprintf(stderr, "%s: error: rank %d: %s\n", command, ranks.rank(), e.what());
    ranks.abort_all(e.kind() == ErrorKind::kUser ? 2 : 1);
    throw;
  }
}

int cores_per_rank(int host_cores) {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks = local ? std::max(1, std::atoi(local)) : 1;
  return std::max(1, host_cores / ranks);
}

}  // namespace protwin::rt
