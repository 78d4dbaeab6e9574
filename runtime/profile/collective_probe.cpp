#include "runtime/profile/collective_probe.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include <ATen/ATen.h>

#include "traces/error.h"

namespace protwin::rt {

std::vector<int64_t> default_collective_probe_bytes() { return {16 << 10, 256 << 10, 1 << 20, 4 << 20}; }

std::vector<CollectiveRow> probe_collectives(RankGroup& ranks, const std::vector<int64_t>& buffer_bytes, int reps) {
  PROTWIN_CHECK(reps >= 1, "collective probe: expected at least 1 repetition, got ", reps);
  std::vector<CollectiveRow> rows;
  const int n = ranks.size();
  if (n == 1) return rows;
  // Bus bytes per rank as RankGroup's throttle and the simulator's collective_bus_bytes count them.
  const double share = static_cast<double>(n - 1) / n;
  struct Kind {
    const char* name;
    double bus_per_byte;
    std::function<void(const at::Tensor&)> run;
  };
  const std::vector<Kind> kinds = {
      {"all_gather", share, [&](const at::Tensor& t) { ranks.all_gather(t); }},
      {"reduce_scatter", share, [&](const at::Tensor& t) { ranks.reduce_scatter_mean(t); }},
      {"all_reduce", 2 * share, [&](const at::Tensor& t) { ranks.all_reduce_mean(t); }},
      {"broadcast", 1.0, [&](const at::Tensor& t) { ranks.broadcast(t, 0); }},
  };
  for (const Kind& k : kinds)
    for (const int64_t bytes : buffer_bytes) {
      at::Tensor buf = at::ones({bytes / 4}, at::kFloat);
      std::vector<double> s;
      for (int i = 0; i < reps; ++i) {
        ranks.all_gather(0.0);  // start together
        const auto t0 = std::chrono::steady_clock::now();
        k.run(buf);
        s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
      rows.push_back({k.name, k.bus_per_byte * static_cast<double>(buf.numel() * 4), s[s.size() / 2]});
    }
  return rows;
}

}  // namespace protwin::rt
