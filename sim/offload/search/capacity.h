// The largest model of a family a system can train on a machine (`protwin capacity`).
//
// The GPT-2 family is scaled the way the Colossal-AI/PatrickStar ladder that ProTrain used is:
// GPT-2 layers (vocab 50257, 1024 learned positions, GeLU 4h MLP, tied embeddings) at hidden
// 4096 (16 heads, as gpt2-10b/15b) or 8192 (16 heads, as gpt2-20b), with as many layers as fit.
// A model "can be trained" when the system's search finds a setting at batch 1 whose simulated
// plan fits every memory pool (GPU, pinned and pageable host). Layers are found by bisection.
// At seq beyond 1024 the ladder's learned position table grows to seq rows (as a long-context
// GPT-2 is trained), so the longest sequence sets the embedding's size, not GPT-2's 1024.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"

namespace protwin::sim::offload {

inline constexpr int64_t kGpt2Positions = 1024;

// The ladder's model: GPT-2 layers at `hidden` (16 heads), position table max(1024, seq).
ModelSpec gpt2_family(int64_t hidden, int64_t layers, int64_t seq);

// What stops one layer more: the needs of the closest setting and which memory runs out (GPU
// memory, host memory, each alone insufficient for any setting, or the two together).
struct NextSize {
  int64_t layers = 0;
  int64_t least_gpu_bytes = 0, least_host_bytes = 0;
  int64_t smallest_peak_gpu_bytes = 0, smallest_host_bytes = 0;
  std::string limited_by;
};

struct Capacity {
  int64_t max_params = 0;  // 0: no model of the ladder fits
  int64_t hidden = 0, layers = 0;
  NextSize next_size;
  std::map<std::string, int64_t> priced_by;  // the largest fitting plan's ops per cost source
};
// JSON with the members' names (`protwin capacity --json`).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NextSize, layers, least_gpu_bytes, least_host_bytes, smallest_peak_gpu_bytes,
                                   smallest_host_bytes, limited_by)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Capacity, max_params, hidden, layers, next_size, priced_by)

// The largest GPT-2-family model (hidden 4096 or 8192, 1 to max_layers layers) o.system trains at
// batch 1 with the search's other options (each size's search simulates its 2 analytically best
// settings); `tick` is called before each hidden size.
Capacity largest_gpt2_model(const hw::HardwareCostModel& cost, SearchOptions o, int64_t max_layers,
                            const std::function<void()>& tick = nullptr);

}  // namespace protwin::sim::offload
