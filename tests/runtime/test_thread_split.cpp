// The compute split holds for BLAS too (issue 23): Debian's LibTorch runs its GEMMs in OpenBLAS,
// whose own thread pool ignored at::set_num_threads, so a rank "with one compute thread" ran every
// GEMM on as many threads as the host has cores. Oracle: with one compute thread, no thread but the
// caller does any work during GEMMs (the process's CPU time equals the calling thread's).
#include <ctime>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "runtime/memory/thread_split.h"
#include "tests/runtime/torch_catch.h"

namespace {
double cpu_s(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

TEST_CASE("set_compute_threads: one compute thread runs a GEMM on the calling thread alone", "[runtime][threads]") {
  using protwin::rt::set_compute_threads;
  const int previous = at::get_num_threads();
  set_compute_threads(2);
  if (protwin::rt::blas_threads() != 0) CHECK(protwin::rt::blas_threads() == 2);
  set_compute_threads(1);
  CHECK(at::get_num_threads() == 1);
  if (protwin::rt::blas_threads() != 0) CHECK(protwin::rt::blas_threads() == 1);

  at::NoGradGuard no_grad;
  const at::Tensor a = at::randn({256, 256}), b = at::randn({256, 256});
  at::Tensor c = at::empty({256, 256});
  for (int i = 0; i < 10; ++i) at::mm_out(c, a, b);  // warm-up
  const double proc0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), thread0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < 300; ++i) at::mm_out(c, a, b);
  const double thread = cpu_s(CLOCK_THREAD_CPUTIME_ID) - thread0, others = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - proc0 - thread;
  INFO("calling thread " << thread << " s CPU, all other threads " << others << " s");
  // Without the BLAS call the OpenBLAS worker did about half of it (0.035 s beside the caller's 0.038 s).
  CHECK(others <= 0.02 * thread + 0.002);
  set_compute_threads(previous);
}
