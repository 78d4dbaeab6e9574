#include "runtime/profile/background_load.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <ATen/ATen.h>

#include "traces/error.h"
#include "traces/thread_cpu_time.h"

namespace protwin::rt {

LocalLoad::LocalLoad(std::function<void()> work)
    : thread_([this, w = std::move(work)] {
        while (!stop_.load()) {
          w();
          runs_.fetch_add(1);
        }
      }) {}

void LocalLoad::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

CollectiveLoad::CollectiveLoad(RankGroup& ranks, int64_t bytes)
    : buffer_(at::ones({std::max<int64_t>(1, bytes / 4)}, at::kFloat)), thread_([this, &ranks] {
        const double c0 = traces::thread_cpu_seconds();
        const long long t0 = ranks.completion_tests();
        try {
          for (;;) {
            const std::vector<double> stop = ranks.all_gather(stop_.load() ? 1.0 : 0.0);
            if (*std::min_element(stop.begin(), stop.end()) > 0) break;  // every rank asked
            ranks.all_gather(buffer_);
            ranks.reduce_scatter_mean(buffer_);
            runs_.fetch_add(1);
          }
        } catch (const Error& e) {  // a failed collective on this thread: end every rank, say why
          std::fprintf(stderr, "protwin profile: error: rank %d: background collectives: %s\n", ranks.rank(), e.what());
          ranks.abort_all(2);
          std::abort();  // one rank: abort_all returns
        }
        cpu_s_ = traces::thread_cpu_seconds() - c0;
        tests_ = ranks.completion_tests() - t0;  // only this thread calls MPI meanwhile
      }) {}

void CollectiveLoad::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace protwin::rt
