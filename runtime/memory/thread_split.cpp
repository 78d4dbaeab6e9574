#include "runtime/memory/thread_split.h"

#include <algorithm>
#include <thread>

#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace protwin::rt {

ThreadSplit ThreadSplit::choose(int cores, bool offloads, int compute_override) {
  ThreadSplit s;
  cores = std::max(1, cores);
  s.compute = compute_override > 0 ? compute_override : offloads ? std::max(1, cores - 1) : cores;
  return s;
}

int ThreadSplit::host_cores() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void ThreadSplit::apply() const { set_compute_threads(compute); }

namespace {
// OpenBLAS's own calls, looked up in the process (LibTorch loads it through libblas.so.3), so a
// build against another BLAS (MKL follows at::set_num_threads) still links and runs.
template <class Fn>
Fn* blas_call(const char* name) {
  return reinterpret_cast<Fn*>(::dlsym(RTLD_DEFAULT, name));
}
}  // namespace

void set_compute_threads(int threads) {
  threads = std::max(1, threads);
  at::set_num_threads(threads);
  static auto* set_blas = blas_call<void(int)>("openblas_set_num_threads");
  if (set_blas) set_blas(threads);
}

int blas_threads() {
  static auto* get_blas = blas_call<int()>("openblas_get_num_threads");
  return get_blas ? get_blas() : 0;
}

}  // namespace protwin::rt
