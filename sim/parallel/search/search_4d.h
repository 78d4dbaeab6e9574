// search-4d: which 4D-parallel layout trains a model fastest on N nodes. Fujii et al.'s
// enumeration and 80 % memory rule (sim/parallel/search/parallel_search.h) prune the layouts; every one
// that fits is compiled and simulated (simulate_4d.h) on a pool of threads, and under mpirun over
// the MPI ranks (sim/distributed/evaluate_points.h); the survivors are ranked by simulated tokens/s.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/parallel/search/parallel_search.h"
#include "sim/parallel/search/simulate_4d.h"

namespace protwin::sim::parallel {

struct Search4dOptions {
  int64_t nodes = 0;
  int64_t mbs_max = 0;         // 0: every power of two with MBS*DP <= GBS, as Fujii et al.
  MegatronOptions base;        // gbs, seq, recompute, dtype, switches (sizes and mbs are searched)
  double gpu_memory_gb = 0;    // nominal; 0: the machine's memory in GiB, rounded
  bool uneven_stages = false;  // also PP with the first and last stage one layer short (parallel_search.h)
  // Simulate4dConfig::collective_sms for every layout; off by default: its passes cost each layout
  // a few simulations, and simulate-4d of the chosen layout has it on.
  bool collective_sms = false;
  int threads = 2;
  std::function<void(long done, long total)> progress;  // called from the calling thread (rank 0: its layouts)
};

// What search-4d reports of a simulated layout (its table and JSON), as it crosses MPI ranks.
struct Layout4dResult {
  int64_t gpus_per_node = 0, nodes = 0;  // the layout's placement (place_groups of its sizes)
  int64_t microbatches = 0;
  double iteration_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0, bubble_fraction = 0;
  double memory_bytes = 0;     // per GPU, the estimator's (MemoryEstimate::total_bytes)
  bool fits_80pct = false;
  std::map<std::string, int64_t> priced_by;
  int64_t peak_live_ops = 0, peak_live_ops_per_stage = 0;
  double memory_gib() const { return memory_bytes / MemoryEstimate::kGiB; }
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Layout4dResult, gpus_per_node, nodes, microbatches, iteration_s, tokens_per_s,
                                   tflops_per_gpu, mfu, bubble_fraction, memory_bytes, fits_80pct, priced_by,
                                   peak_live_ops, peak_live_ops_per_stage)

struct Search4dRow {
  SearchCandidate candidate;   // the layout and its enumeration-time estimate
  bool simulated = false;
  std::string failure;         // why the compiler or simulator refused it
  Layout4dResult result;
};

struct Search4dResult {
  std::string model, machine;
  int64_t nodes = 0, gpus_per_node = 0, world = 0;
  double gpu_memory_gb = 0;
  MegatronOptions options;     // the searched settings (seq resolved)
  ParallelSearchResult enumeration;
  int64_t over_mbs_max = 0;    // fitting layouts left out by mbs_max
  std::vector<Search4dRow> ranked;  // simulated, fastest first; then the refused ones
  int64_t simulated = 0, failed = 0;
  double seconds = 0;          // wall time of the simulations
};

Search4dResult search_4d(const ModelSpec& model, const hw::HardwareCostModel& cost, const Search4dOptions& o);

// {"model", "machine", "nodes", "gpus_per_node", "world", "seq", "gbs", "recompute",
//  "gpu_memory_GB", "threshold_GiB", "seconds", "counts": {...}, "configurations": [top rows],
//  "failures": [...]}; top 0 lists every simulated row.
nlohmann::json search_4d_to_json(const Search4dResult& r, size_t top);

}  // namespace protwin::sim::parallel
