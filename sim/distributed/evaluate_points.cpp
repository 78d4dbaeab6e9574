#include "sim/distributed/evaluate_points.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "sim/distributed/mpi_transport.h"
#include "traces/error.h"
#include "traces/mpi_plugin.h"

namespace protwin::sim {

namespace {

// The MPI plugin's entry points (mpi_transport.h), resolved once.
struct Transport {
  decltype(&protwin_mpi_init) init = nullptr;
  decltype(&protwin_mpi_gather) gather = nullptr;
  decltype(&protwin_mpi_free) free = nullptr;
  decltype(&protwin_mpi_finalize) finalize = nullptr;
};
Transport g_transport;

struct MpiRanks {
  int rank = 0, size = 1;
  bool active() const { return size > 1; }
};

MpiRanks start_mpi() {
  if (!traces::launched_by_mpirun()) return {};
  void* lib = traces::open_mpi_plugin();
  g_transport.init = traces::mpi_plugin_function<decltype(&protwin_mpi_init)>(lib, "protwin_mpi_init");
  g_transport.gather = traces::mpi_plugin_function<decltype(&protwin_mpi_gather)>(lib, "protwin_mpi_gather");
  g_transport.free = traces::mpi_plugin_function<decltype(&protwin_mpi_free)>(lib, "protwin_mpi_free");
  g_transport.finalize = traces::mpi_plugin_function<decltype(&protwin_mpi_finalize)>(lib, "protwin_mpi_finalize");
  MpiRanks r;
  PROTWIN_CHECK(g_transport.init(&r.rank, &r.size) == 0, "mpirun: MPI_Init failed");
  std::atexit([] { g_transport.finalize(); });
  return r;
}

// This process's rank and the number of ranks. Under mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK in
// the environment) the first call loads the plugin and initialises MPI (finalised at exit); else
// {0, 1} and nothing is loaded.
MpiRanks mpi_ranks() {
  static const MpiRanks ranks = start_mpi();
  return ranks;
}

// This rank's outcomes as [[index, value] or [index, kind, message], ...] in CBOR.
std::vector<uint8_t> encode_outcomes(const std::vector<size_t>& mine, const detail::PointSlots& slots,
                                     const std::vector<std::optional<PointError>>& errors) {
  nlohmann::json all = nlohmann::json::array();
  for (size_t i : mine) {
    if (errors[i]) all.push_back({i, static_cast<int>(errors[i]->kind), errors[i]->message});
    else all.push_back({i, slots.encode(i)});
  }
  return nlohmann::json::to_cbor(all);
}

void decode_outcomes(const uint8_t* data, size_t n, const detail::PointSlots& slots,
                     std::vector<std::optional<PointError>>& errors) {
  for (const auto& o : nlohmann::json::from_cbor(data, data + n)) {
    const size_t i = o.at(0).get<size_t>();
    PROTWIN_ASSERT(i < errors.size(), "a rank sent point ", i, " of ", errors.size());
    if (o.size() == 3) errors[i] = PointError{static_cast<PointError::Kind>(o.at(1).get<int>()), o.at(2)};
    else slots.decode(i, o.at(1));
  }
}

}  // namespace

void run_on_threads(const std::vector<size_t>& mine, int threads, const std::function<void(size_t)>& run,
                    std::vector<std::optional<PointError>>& errors, const std::function<void(long, long)>& progress) {
  std::atomic<size_t> next{0}, done{0};
  auto work = [&](bool report) {
    for (size_t k = next++; k < mine.size(); k = next++) {
      const size_t i = mine[k];
      try {
        run(i);
      } catch (const Error& e) {
        errors[i] = PointError{e.kind() == ErrorKind::kUser ? PointError::Kind::kUser : PointError::Kind::kInternal,
                               e.what()};
      } catch (const std::exception& e) {
        errors[i] = PointError{PointError::Kind::kOther, e.what()};
      }
      ++done;
      if (report && progress) progress(static_cast<long>(done.load()), static_cast<long>(mine.size()));
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < threads && static_cast<size_t>(t) < mine.size(); ++t) pool.emplace_back(work, false);
  } catch (...) {  // no more threads: the ones started and this one do the work
  }
  work(true);
  for (auto& th : pool) th.join();
  if (progress) progress(static_cast<long>(mine.size()), static_cast<long>(mine.size()));
}

void PointError::rethrow() const {
  switch (kind) {
    case Kind::kUser: throw Error(message);
    case Kind::kInternal: throw Error(message, ErrorKind::kInternal);
    case Kind::kOther: break;
  }
  throw std::runtime_error(message);
}

namespace detail {

std::vector<std::optional<PointError>> evaluate_points(size_t n, int threads, const PointSlots& slots,
                                                       const std::function<void(long, long)>& progress) {
  PROTWIN_CHECK(threads >= 1, "--threads ", threads, ": must be at least 1");
  const MpiRanks ranks = mpi_ranks();
  std::vector<size_t> mine;
  for (size_t i = static_cast<size_t>(ranks.rank); i < n; i += static_cast<size_t>(ranks.size)) mine.push_back(i);
  std::vector<std::optional<PointError>> errors(n);
  const auto t0 = std::chrono::steady_clock::now();
  run_on_threads(mine, threads, slots.run, errors, ranks.rank == 0 ? progress : nullptr);
  if (!ranks.active()) return errors;
  const auto t1 = std::chrono::steady_clock::now();

  const std::vector<uint8_t> sent = ranks.rank == 0 ? std::vector<uint8_t>{} : encode_outcomes(mine, slots, errors);
  PROTWIN_CHECK(sent.size() < INT_MAX, "mpirun: rank ", ranks.rank, "'s results are ", sent.size(),
                " bytes, more than one MPI message carries (2 GiB); use more ranks");
  uint8_t* received = nullptr;
  std::vector<long long> lengths(static_cast<size_t>(ranks.size), 0);
  const int rc = g_transport.gather(sent.data(), static_cast<long long>(sent.size()), &received, lengths.data());
  PROTWIN_CHECK(rc == 0, "mpirun: gathering the points' results on rank 0 failed (", rc == 2 ?
                "more than 2 GiB in all; use fewer points per run" : "MPI error", ")");
  if (ranks.rank != 0) throw WorkerRankDone{};
  const auto t2 = std::chrono::steady_clock::now();
  size_t offset = 0;
  try {
    for (long long len : lengths) {
      if (len > 0) decode_outcomes(received + offset, static_cast<size_t>(len), slots, errors);
      offset += static_cast<size_t>(len);
    }
  } catch (...) {
    g_transport.free(received);
    throw;
  }
  g_transport.free(received);
  // PROTWIN_MPI_STATS=1: what the projection to more ranks needs (experiments/design-space).
  if (std::getenv("PROTWIN_MPI_STATS")) {
    const auto t3 = std::chrono::steady_clock::now();
    auto s = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    std::fprintf(stderr, "mpi: %d ranks, %zu points; rank 0 evaluated %zu in %.3f s, then waited for and gathered "
                 "%zu bytes in %.3f s and decoded them in %.3f s\n", ranks.size, n, mine.size(), s(t0, t1), offset,
                 s(t1, t2), s(t2, t3));
  }
  return errors;
}

}  // namespace detail

}  // namespace protwin::sim
