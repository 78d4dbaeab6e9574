#include "runtime/memory/thread_split.h"

#include <algorithm>
#include <thread>

#include <ATen/Parallel.h>

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

void ThreadSplit::apply() const { at::set_num_threads(compute); }

}  // namespace protwin::rt
