#include "runtime/comm/wait_probe.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "traces/error.h"
#include "traces/thread_cpu_time.h"

namespace protwin::rt {
namespace {

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double measure_wait_cpu_share(RankGroup& ranks, double seconds, int rounds) {
  PROTWIN_ASSERT(seconds > 0 && rounds > 0, "measure_wait_cpu_share: seconds and rounds must be > 0");
  if (ranks.size() == 1) return 0;
  const at::Tensor buf = at::zeros({ranks.size()}, at::kFloat);
  std::vector<double> shares;
  for (int i = 0; i < rounds; ++i) {
    ranks.all_gather(0.0);  // every rank starts the round together
    double mine = 0;
    if (ranks.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      ranks.all_gather(buf);
    } else {
      const double c0 = traces::thread_cpu_seconds(), t0 = wall_s();
      ranks.all_gather(buf);
      mine = (traces::thread_cpu_seconds() - c0) / std::max(1e-9, wall_s() - t0);
    }
    const std::vector<double> all = ranks.all_gather(mine);
    double sum = 0;
    for (size_t r = 1; r < all.size(); ++r) sum += all[r];
    shares.push_back(sum / static_cast<double>(all.size() - 1));
  }
  std::nth_element(shares.begin(), shares.begin() + static_cast<long>(shares.size() / 2), shares.end());
  return shares[shares.size() / 2];
}

}  // namespace protwin::rt
