// How the emulated device shares the host's cores: intra-op threads for compute (the "GPU"), one
// thread per copy direction, one for the CPU optimizer. The copy and optimizer workers are
// single-threaded by construction (memcpy, adam_step_cpu with threads = 1); compute threads are set
// with set_compute_threads, which is process-wide.
#pragma once

namespace protwin::rt {

struct ThreadSplit {
  int compute = 1;    // ATen intra-op threads for forward/backward/recompute/device Adam
  int copy = 1;       // per copy direction
  int optimizer = 1;  // CPU Adam threads

  // Default split on `cores` cores: when the plan keeps CPU work running beside compute (CPU Adam
  // or copies), compute leaves one core for it; otherwise compute takes every core.
  // compute_override > 0 forces the compute thread count.
  static ThreadSplit choose(int cores, bool offloads, int compute_override = 0);
  // Cores of this machine (std::thread::hardware_concurrency, at least 1).
  static int host_cores();
  // Applies the compute setting (set_compute_threads).
  void apply() const;
};

// Sets the threads every compute kernel may use, process-wide: ATen's intra-op pool
// (at::set_num_threads) AND the BLAS library's own pool. Debian's LibTorch runs its GEMMs in
// OpenBLAS (pthread build), whose pool has one thread per core whatever at::set_num_threads says:
// a "1-thread" rank ran every GEMM on 2 threads, so two ranks on 2 cores ran 4 (issue 23).
void set_compute_threads(int threads);
// The BLAS library's thread count (openblas_get_num_threads), or 0 when the BLAS has no such call.
int blas_threads();

}  // namespace protwin::rt
