// One simulated iteration of a 4D-parallel layout and what it means: throughput, model-flops
// TFLOPS per GPU and MFU, the pipeline bubble measured on the timeline, and the layout's memory
// from Fujii et al.'s estimator with the 80 % rule. Used by `protwin simulate-4d` and
// `protwin search-4d`.
//
// Definitions:
// - tokens_per_s = GBS * seq / iteration_s.
// - tflops_per_gpu: MODEL flops, model_flops_per_token (megatron_compiler.h: 3x the forward GEMM
//   and attention flops; for GPT Narayanan et al.'s formula without the recomputed forward)
//   x GBS x seq / (iteration_s x GPUs). Recomputation is not counted: this is the MFU numerator.
//   hw_tflops_per_gpu adds the recompute ops' GEMM/attention flops actually executed (for full
//   recompute, Narayanan et al.'s 96 B s l h^2 (...) figure is this one).
// - mfu = tflops_per_gpu / the GPU's peak dense TFLOPS of the compute dtype.
// - bubble_fraction: for each stage's simulated rank, the idle fraction of its compute stream
//   over the pipeline window (first forward start to last backward end over all stages; the
//   parameter gather before and the optimizer after are outside it); the mean over stages.
//   Inline TP collectives count as busy. With equal stage times and free communication this is
//   (p-1)/(m+p-1) on every stage ((p-1)/(vm+p-1) interleaved). bubble_fraction_stage0: stage 0's.
// - memory_GiB: the Fujii estimate (first pipeline stage) of this layout, recompute and
//   distributed-optimizer settings, virtual stages and micro-batch count; fits_80pct: total <=
//   0.8 x the nominal GPU memory (GB compared with GiB, as the authors do), the nominal size
//   being the machine's memory in GiB rounded (80 for an 80 GB card) unless given.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/hardware_cost_model.h"
#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/compiler/megatron_compiler.h"
#include "traces/report.h"

namespace protwin::sim::parallel {

struct Simulate4dConfig {
  MegatronOptions options;
  int64_t nodes = 0;           // 0: as many as TP*CP*PP*DP needs
  double gpu_memory_gb = 0;    // nominal; 0: the machine's memory in GiB, rounded
  bool keep_report = false;    // compile the whole plan and keep the whole Report (ops) in the result
  // Streamed outputs: every op's record as it ends, in any order (traces::RecordSpool puts them
  // back in id order; the Report in the result then has everything but its ops), and the plan (its kernel sets, every op described) written to
  // plan_path as a second stream generates it in id order. Neither holds the plan or the report.
  OpRecordSink records;
  std::string plan_path;
  // Compute kernels slowed while a collective of their rank runs, by the SMs its kernel takes
  // (the machine's /collectives/intra_node/ring_channels; sim/engine/contention.h
  // collective_sm_rules). --collective-sms off: the simulation without it.
  bool collective_sms = true;
};

struct Simulate4dResult {
  std::string model, machine;
  MegatronOptions options;     // seq resolved
  Placement placement;
  int64_t world = 0, microbatches = 0, ops = 0;
  double iteration_s = 0, tokens_per_s = 0;
  double model_flops_per_token = 0, tflops_per_gpu = 0, hw_tflops_per_gpu = 0, peak_tflops = 0, mfu = 0;
  double bubble_fraction = 0, bubble_fraction_stage0 = 0;
  std::vector<double> stage_bubble_fraction;
  MemoryEstimate memory;
  double gpu_memory_gb = 0, memory_limit_gib = 0;
  bool fits_80pct = false;
  std::vector<traces::StreamRecord> streams;
  std::map<std::string, int64_t> priced_by;  // ops per cost source (traces::Report::priced_by)
  traces::Report report;       // with keep_report; with records, without its ops
  int64_t peak_live_ops = 0;   // the most ops the simulation held at once (RunStats::peak_live_ops)
  int64_t peak_live_ops_per_stage = 0;  // streamed: the most one stage's rank held (RunStats)
};

// Nodes a layout needs on nodes of `gpus_per_node` GPUs, or the check of a given count; errors
// name the flags (--nodes, --tp/--cp/--pp/--dp).
int64_t nodes_for_layout(const ParallelSizes& sizes, int64_t gpus_per_node, int64_t nodes,
                         const std::string& machine);

// Tokens of one iteration (GBS x seq) simulate-4d and search-4d accept: 2^30, 256 x Llama 3's
// 4M-token batches; beyond it iteration times approach int64 nanoseconds.
inline constexpr int64_t kMaxTokensPerIteration = int64_t{1} << 30;
// Checks seq and GBS x seq against kMaxTokensPerIteration; errors name --gbs or --seq.
void check_tokens_per_iteration(int64_t gbs, int64_t seq);

// Checks the layout (errors name the flag: --tp, --pp, --cp, --dp, --mbs, --gbs, --seq, --vpp,
// --nodes), compiles it, simulates it and measures it. Without keep_report and plan_out the ops
// are generated as the simulation takes them (MegatronOpStream) and measured as they finish:
// memory follows each stage's in-flight ops, not the plan's length; the numbers are the same.
Simulate4dResult simulate_4d(const ModelSpec& model, const hw::HardwareCostModel& cost,
                             const Simulate4dConfig& cfg, ParallelPlan* plan_out = nullptr);

// The metrics of a simulated plan (bubble, flops) — simulate_4d's second half, for tests.
void measure_4d(const ParallelPlan& plan, const traces::Report& report, Simulate4dResult& r);

// The same from the op records one at a time (a streamed run's sink), then the report's totals.
class Measure4d {
 public:
  explicit Measure4d(const ParallelPlan& plan);
  void add(const traces::OpRecord& op);
  // `ops`: how many ops the run had.
  void finish(const ParallelPlan& plan, const traces::Report& report, int64_t ops, Simulate4dResult& r) const;

 private:
  std::unordered_map<std::string, size_t> stage_of_;  // compute stream -> stage
  std::vector<int64_t> busy_;
  int64_t first_ = std::numeric_limits<int64_t>::max(), last_ = 0;
};

// {"model", "machine", "config", "placement", "iteration_s", "tokens_per_s", "tflops_per_gpu",
//  "hw_tflops_per_gpu", "mfu", "peak_tflops", "bubble_fraction", "bubble_fraction_stage0",
//  "stage_bubble_fraction", "memory_GiB", "memory_limit_GiB", "gpu_memory_GB", "fits_80pct",
//  "memory", "ops", "streams", "priced_by", "peak_live_ops", "peak_live_ops_per_stage"}
nlohmann::json simulate_4d_to_json(const Simulate4dResult& r);
nlohmann::json placement_to_json(const Placement& p);

}  // namespace protwin::sim::parallel
