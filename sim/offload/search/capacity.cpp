#include "sim/offload/search/capacity.h"

#include <algorithm>

namespace protwin::sim::offload {

ModelSpec gpt2_family(int64_t hidden, int64_t layers, int64_t seq) {
  return resolve_model("gpt2:hidden=" + std::to_string(hidden) + ",layers=" + std::to_string(layers) +
                       ",heads=16,vocab=50257,max_positions=" + std::to_string(std::max(kGpt2Positions, seq)));
}

Capacity largest_gpt2_model(const hw::HardwareCostModel& cost, SearchOptions o, int64_t max_layers,
                            const std::function<void()>& tick) {
  o.batch = 1;
  o.simulate_top = 2;
  std::map<std::string, int64_t> fitting_priced_by;  // of the last plan that fit
  auto fits = [&](int64_t hidden, int64_t layers) {
    const SearchResult r = search_policy(gpt2_family(hidden, layers, o.seq), cost, o);
    if (r.found) fitting_priced_by = r.best.priced_by;
    return r.found;
  };
  Capacity out;
  for (int64_t h : {int64_t{4096}, int64_t{8192}}) {
    if (tick) tick();
    if (!fits(h, 1)) continue;
    int64_t lo = 1, hi = max_layers;  // fits(lo); find the largest that fits
    if (fits(h, hi)) lo = hi;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (fits(h, mid)) lo = mid;
      else hi = mid - 1;
    }
    const int64_t params = gpt2_family(h, lo, o.seq).parameter_count();
    if (params > out.max_params) {
      out.max_params = params;
      out.hidden = h;
      out.layers = lo;
      out.priced_by = fitting_priced_by;  // bisection's last fitting call was at lo
    }
  }
  if (out.max_params == 0) return out;
  const SearchResult r = search_policy(gpt2_family(out.hidden, out.layers + 1, o.seq), cost, o);
  const RankMemory cap = rank_memory(cost.machine(), o.gpus, o.nodes);
  const bool gpu = r.least_gpu_bytes > cap.gpu_bytes, host = r.least_host_bytes > cap.host_bytes;
  out.next_size = {out.layers + 1,
                   r.least_gpu_bytes,
                   r.least_host_bytes,
                   r.smallest_peak_gpu_bytes,
                   r.smallest_host_bytes,
                   gpu && host ? "gpu and host memory"
                   : gpu       ? "gpu memory"
                   : host      ? "host memory"
                               : "gpu and host memory together"};
  return out;
}

}  // namespace protwin::sim::offload
