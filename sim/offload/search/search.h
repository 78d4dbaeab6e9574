// The policy search (DESIGN §6, REFERENCE §1): for one system, enumerate its knobs (and the batch
// size with batch 0 = auto), prune with the analytic peak-memory model, rank the survivors with
// the analytic runtime model, then compile and simulate the most promising ones (the top by
// analytic time plus the analytic Pareto front of time vs GPU memory) on SearchOptions::threads
// threads, and return the best simulated plan and the simulated Pareto front (throughput vs peak
// GPU memory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/workload/model_spec.h"
#include "traces/report.h"

namespace protwin::sim::offload {

struct SearchOptions {
  std::string system = "protrain";
  int gpus = 1;                   // data-parallel ranks, all nodes together
  int nodes = 1;                  // nodes the ranks spread over evenly (place_ranks)
  int64_t batch = 0;              // 0: search the batch size too (powers of two)
  int64_t max_batch = 64;
  int64_t seq = 0;                // 0: the model's default
  std::string dtype = "fp16";
  bool flash_attention = false;   // the papers' baselines ran eager attention
  bool hf_eager = false;          // HF GPT2Block's eager kernels, with its default dropout 0.1
                                  // (WorkloadOptions::hf_eager; GPT-2 family only)
  int threads = 2;
  int simulate_top = 12;          // candidates simulated per batch size (plus the Pareto front)
  // Fixed knobs: a value >= 0 pins that knob (e.g. an ablation: n_persist = 0).
  int fix_n_persist = -1, fix_n_buffer = -1, fix_n_swap = -1, fix_n_checkpoint = -1;
  bool all_checkpoint = false;     // ablation: every layer CKPT
  int force_overlap = -1;          // ablation: 0 turns off CPU Adam overlap
  int force_buffer_reuse = -1;     // ablation: 0 turns off buffer reuse
  std::function<void(long done, long total)> progress;  // called from the calling thread
};

struct Candidate {
  OffloadKnobs knobs;
  int64_t batch = 0;
  double analytic_s = 0;
  int64_t analytic_peak_gpu_bytes = 0;
  // Simulated (valid when simulated is true).
  bool simulated = false;
  double iteration_s = 0, tokens_per_s = 0;
  double forward_s = 0, backward_s = 0, exposed_optimizer_s = 0;
  int64_t peak_gpu_bytes = 0, peak_pinned_bytes = 0, peak_pageable_bytes = 0;
  int64_t bound_gpu_bytes = 0;  // validate(): the GPU high-water under any schedule
  int64_t init_gpu_bytes = 0, init_host_bytes = 0;  // while the system builds the model (init_memory.h)
  std::map<std::string, int64_t> priced_by;  // the plan's ops per cost source (traces::Report::priced_by)
  std::string failure;  // why the simulator refused it, if it did
};

struct SearchResult {
  std::string system;
  bool found = false;
  Candidate best;
  CompiledPlan best_plan;
  traces::Report best_report;
  std::vector<Candidate> pareto;     // simulated, by increasing peak GPU memory
  long configurations = 0;           // knob settings considered (all batches)
  long pruned = 0;                   // refused by the analytic peak model
  long simulated = 0;
  // The needs of the setting closest to fitting (GPU bytes, host pinned + pageable bytes).
  int64_t smallest_peak_gpu_bytes = 0;
  int64_t smallest_host_bytes = 0;
  // The least GPU and the least host memory any setting needs, each on its own (so a user sees
  // whether GPU memory alone, or host memory alone, would ever suffice).
  int64_t least_gpu_bytes = 0;
  int64_t least_host_bytes = 0;
  double seconds = 0;                // wall time of the search
  std::string first_failure;         // why the simulator refused a setting the analytic model let through
};

// Throws protwin::Error for bad options (unknown system, batch 0 given explicitly, ...).
SearchResult search_policy(const ModelSpec& model, const hw::HardwareCostModel& cost, const SearchOptions& o);

// Compiles and simulates one knob setting (used by the search and by `simulate --policy`), the
// gpus ranks spread over `nodes` nodes; `layout`: layout_for(w, k) if the caller has it.
Candidate evaluate(const Workload& w, const hw::HardwareCostModel& cost, int gpus, const OffloadKnobs& k,
                   CompiledPlan* plan_out = nullptr, traces::Report* report_out = nullptr, int nodes = 1,
                   std::shared_ptr<const ChunkLayout> layout = nullptr);

// The workload the options describe at one batch size (sequence, dtype, attention).
Workload options_workload(const ModelSpec& model, const SearchOptions& o, int64_t batch);

// Memory limits of one rank on a machine: the host is shared by the gpus / nodes ranks of a node.
RankMemory rank_memory(const hw::Machine& m, int gpus, int nodes = 1);

// The nodes `gpus` data-parallel ranks take on the machine (`gpus` 0: all GPUs of the nodes):
// `nodes` when it is given (> 0), else one node, or as many whole nodes as `gpus` fills. Refuses
// (protwin::Error naming --gpus or --nodes) ranks that do not spread evenly, more ranks per node
// than a node has GPUs, and more than one node on a machine without inter-node data (/network or
// /collectives/inter_node). Returns {gpus, nodes}.
std::pair<int, int> place_ranks(const hw::HardwareCostModel& cost, int gpus, int nodes);

// A candidate as JSON (nlohmann::json(c)) and back (j.get<Candidate>(): every field written;
// "simulated" when it has iteration_s).
void to_json(nlohmann::json& j, const Candidate& c);
void from_json(const nlohmann::json& j, Candidate& c);

// A search's outcome without its plan, report and Pareto front, as it crosses MPI ranks.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SearchResult, system, found, best, configurations, pruned, simulated,
                                   smallest_peak_gpu_bytes, smallest_host_bytes, least_gpu_bytes, least_host_bytes,
                                   seconds, first_failure)

}  // namespace protwin::sim::offload
