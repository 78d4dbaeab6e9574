// Independent points — a sweep's grid points, search-4d's layouts, compare's and capacity's
// systems — evaluated on this process's threads and, when the process was started by mpirun, over
// the MPI ranks. Point i runs on rank i mod N (a cyclic split, so the cheap and the dear corners of
// a grid spread over the ranks); rank 0 gathers every outcome, in order, and carries on exactly as
// one process would; the other ranks throw WorkerRankDone once their outcomes are sent (main()
// exits 0 quietly). Without mpirun nothing is loaded: MPI lives in a plugin (libprotwin_mpi.so,
// beside the executable) that is opened only then, so start-up does not pay for it.
//
// A point's failure is kept with that point (its message and kind), wherever it ran; the caller
// decides whether it refuses the point (search-4d) or the run (sweep, compare, capacity, as before).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::sim {

// Thrown on MPI ranks other than 0 once their points are sent to rank 0, which prints the result.
struct WorkerRankDone {};

// What a point threw: a protwin::Error (user or internal) or another exception.
struct PointError {
  enum class Kind { kUser, kInternal, kOther } kind = Kind::kUser;
  std::string message;
  [[noreturn]] void rethrow() const;  // as it was thrown (same message, same exit code)
};

// The one thread pool of the simulations (issue 17): run(i) for every index of `indices` on
// `threads` threads, the calling thread one of them; what an index throws is kept in errors[i]
// (sized by the caller); progress(done, total) is called from the calling thread.
void run_on_threads(const std::vector<size_t>& indices, int threads, const std::function<void(size_t)>& run,
                    std::vector<std::optional<PointError>>& errors,
                    const std::function<void(long, long)>& progress = nullptr);

template <class T>
struct PointOutcome {
  std::optional<T> value;               // set when the point succeeded
  std::optional<PointError> error;      // set when it threw
  const T& get() const {                // the value, or the point's error rethrown
    if (error) error->rethrow();
    return *value;
  }
};

namespace detail {
// The untyped core: runs run(i) for this rank's points on `threads` threads, records failures,
// and under MPI sends encode(i) of this rank's successes to rank 0, which calls decode(i, json).
struct PointSlots {
  std::function<void(size_t)> run;
  std::function<nlohmann::json(size_t)> encode;
  std::function<void(size_t, const nlohmann::json&)> decode;
};
std::vector<std::optional<PointError>> evaluate_points(size_t n, int threads, const PointSlots& slots,
                                                       const std::function<void(long, long)>& progress);
}  // namespace detail

// Evaluates points 0..n-1 with `evaluate` and returns every outcome, in order (on rank 0; the
// other ranks throw WorkerRankDone). `threads` threads per rank (1: the calling thread only);
// `progress(done, total)` is called from the calling thread of rank 0 after each of its points.
// A value crosses ranks as JSON (T's to_json and from_json; sent as CBOR, so every double comes
// back bit-exact): only what the caller reads from the value needs to survive the trip.
template <class T>
std::vector<PointOutcome<T>> evaluate_points(size_t n, int threads, const std::function<T(size_t)>& evaluate,
                                             const std::function<void(long, long)>& progress = nullptr) {
  std::vector<PointOutcome<T>> out(n);
  detail::PointSlots slots;
  slots.run = [&](size_t i) { out[i].value = evaluate(i); };
  slots.encode = [&](size_t i) { return nlohmann::json(*out[i].value); };
  slots.decode = [&](size_t i, const nlohmann::json& j) { out[i].value = j.get<T>(); };
  std::vector<std::optional<PointError>> errors = detail::evaluate_points(n, threads, slots, progress);
  for (size_t i = 0; i < n; ++i) out[i].error = std::move(errors[i]);
  return out;
}

}  // namespace protwin::sim
