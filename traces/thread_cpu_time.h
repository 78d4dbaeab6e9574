// CPU seconds the calling thread has run (CLOCK_THREAD_CPUTIME_ID): on a shared machine less
// disturbed than wall time (bench, the engine's event loop), and what a waiting thread really
// uses of its core (runtime/comm/wait_probe.h).
#pragma once

#include <time.h>

namespace protwin::traces {

inline double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace protwin::traces
