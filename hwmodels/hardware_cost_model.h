// HardwareCostModel: op -> duration from a Machine's curves (DESIGN §5, hardware.md §5).
//
// - GEMM: max(flops / gemm_curve(GFLOP per call), bytes / achievable HBM, launch floor); the curve
//   is interpolated in log10(GFLOP); below its first point the first point's time is a floor,
//   above its last point sustained_tflops applies.
// - Memory-bound kernels: max(bytes / hbm_curve(bytes), launch floor).
// - Attention (unfused): QK^T and PV as batched GEMMs (roofline with their bytes) + softmax;
//   backward = 2x each GEMM + softmax backward. Flash: flops / flash_{fwd,bwd}_tflops.
// - Host<->device copies: latency + bytes / (rate x size_curve(bytes)), with rate pinned or
//   pageable. When both directions run, the simulator shares three links: pcie_h2d, pcie_d2h and
//   pcie_duplex, whose capacity is the total rate measured with both directions busy
//   (f_h2d r_h2d + f_d2h r_d2h); max-min sharing then gives each direction half of that.
// - CPU Adam: fixed + P / min(cores x per-core rate, efficiency x DRAM GB/s / bytes per param);
//   ranks on one host (Plan::gpus / Plan::nodes) share its cores and DRAM. Device Adam: memory-bound over bytes per param.
// - Collectives (NCCL-tests busbw): all-gather / reduce-scatter a + (n-1)/n S / busbw,
//   all-reduce a + 2(n-1)/n S / busbw (broadcast: busbw = algbw, a + S / busbw). Host-staged
//   domains (no P2P) also load the PCIe links. Groups placed on a cluster (op.group.ranks_per_node)
//   and point-to-point send_recv use the per-level model of hwmodels/collective_model.h.
// A measured op profile wins over the curves for any kernel it has (ProfileLookup).
//
// Kernel-time source (issue #19), on machines with gpu.sms: profile, else the machine's measured
// kernel tables (hwmodels/kernel_table.h: exact, else interpolated in log space), else the
// shape-aware model (hwmodels/kernel_model.h); machines without gpu.sms keep the curves above.
// kernel_time() says which priced a kernel; results are memoised per kernel.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hwmodels/collective_model.h"
#include "hwmodels/cost_model.h"
#include "hwmodels/kernel_table.h"
#include "hwmodels/machine.h"
#include "traces/op_signature.h"

namespace protwin::hw {

// Seconds per run of a kernel when a measured profile has it (e.g. traces::OpProfile::lookup).
using ProfileLookup = std::function<std::optional<double>(const traces::OpSignature&)>;

enum class CopyDirection { kH2D, kD2H };
enum class CollectiveScope { kIntraNode, kInterNode };

class HardwareCostModel : public CostModel {
 public:
  // Indices into links().
  static constexpr int kLinkH2D = 0, kLinkD2H = 1, kLinkDuplex = 2;

  explicit HardwareCostModel(Machine machine, ProfileLookup profile = {});

  const Machine& machine() const { return machine_; }

  // CostModel. Ops: forward/backward/recompute (and any op with a kernel set) sum their kernels;
  // h2d/d2h copy work.bytes (pageable when op.pinned is false or a read tensor lives in the
  // "pageable" pool); all_gather/reduce_scatter/all_reduce/broadcast over op.group.ranks or
  // meta.gpus ranks (group.inter_node for the inter-node domain; with
  // group.ranks_per_node the group is placed on nodes, group.groups_per_node the groups sharing a
  // node's NICs, see collective_model.h); send_recv copies
  // work.bytes between two GPUs (group.inter_node across nodes); adam_cpu/adam_device
  // update work.params; host_cast moves work.bytes through host DRAM; alloc/free cost nothing (steady-state caching allocator); other ops with
  // work use a roofline at sustained TFLOPS and achievable HBM bandwidth.
  std::vector<LinkSpec> links() const override;
  // With the machine's host_dispatch section (DESIGN §4) the cost also says what the host thread
  // spends issuing the op, a phase on its host thread before its stream's (add_host_phase).
  OpCost cost(const traces::Op& op, const traces::Plan& plan) const override;
  int launch_queue_depth() const override { return machine_.host_dispatch.launch_queue_depth; }
  const std::vector<ContentionRule>& contention() const override { return contention_; }
  void set_contention(std::vector<ContentionRule> rules) { contention_ = std::move(rules); }

  // Direct functions for analytic models, in seconds.
  // Achieved TFLOPS of one GEMM call of `gflop` (the curve, or sustained above it).
  double gemm_tflops(double gflop, const std::string& dtype) const;
  double memory_seconds(double bytes) const;
  // shape {batch*heads, seq_q, seq_k, head_dim}. Unfused: the batched GEMMs only (the softmax
  // is a kernel of its own); flash: the fused kernel.
  double attention_seconds(const std::vector<int64_t>& shape, const std::string& dtype, bool flash,
                           bool backward) const;
  // One run of a kernel (profile first) and where its time came from; `backward` selects the
  // backward of attention kernels and, for memory-bound kernels without explicit bytes, the
  // backward traffic.
  KernelTime kernel_time(const traces::Kernel& k, bool backward = false) const;
  // The sum of a kernel set's kernels (count x kernel_time), memoised per distinct set.
  KernelTime kernel_set_time(const traces::KernelSet& ks, bool backward) const;
  // One (batched, batch >= 1) GEMM with its source.
  KernelTime gemm_time(int64_t batch, int64_t m, int64_t n, int64_t k, const std::string& dtype) const;
  // A collective of `ranks` ranks, `ranks_per_node` per node, with its source. send_recv: 2 ranks.
  KernelTime collective_time(const std::string& kind, double bytes, int ranks, int ranks_per_node) const;
  // The shape-aware model alone (no profile, no table) for a table entry moving `bytes`; NaN when
  // it cannot price the kind (what KernelTable corrects).
  double model_seconds(const traces::OpSignature& sig, double bytes) const;
  // Prices with these tables (measured on this machine) instead of the machine's; empty: none.
  // Call before pricing anything; the tables must outlive the cost model.
  void set_kernel_tables(const std::vector<const traces::OpProfile*>& tables);
  double copy_seconds(double bytes, CopyDirection dir, bool pinned, bool both_directions) const;
  double cpu_adam_params_per_s(int ranks_sharing_host = 1) const;
  double cpu_adam_seconds(double params, int ranks_sharing_host = 1) const;
  // The device optimizer step over `params`: the machine's fused device Adam, or with
  // bytes_per_param > 0 a step moving that much (a framework's own passes, counted from its code).
  double device_adam_seconds(double params, double bytes_per_param = 0) const;
  // A CPU pass over `bytes` of host memory (a dtype cast), at the rank's share of DRAM bandwidth.
  double host_cast_seconds(double bytes, int ranks_sharing_host = 1) const;
  // One host_pass op (sub-kind overflow_scan | unscale | fp16_copy) over `elems` fp32 elements
  // moving `bytes`: the slower of the DRAM-bandwidth bound and the measured per-element cost
  // (machine host_passes), each rank with its share of the host.
  double host_pass_seconds(traces::OpSubKind pass, double bytes, double elems, int ranks_sharing_host = 1) const;
  // A group inside one node (kIntraNode) or, with kInterNode, the machine's inter-node domain;
  // on a machine with only a /network, kInterNode places the group on whole nodes (G per node) when
  // it is a multiple of G larger than one node, else one rank per node. With what priced it.
  KernelTime collective_time(CollectiveKind kind, double bytes, int ranks,
                             CollectiveScope scope = CollectiveScope::kIntraNode) const;
  // A group of `ranks` ranks with `ranks_per_node` on each node, `groups_per_node` groups sharing a
  // node's NICs (0: all of the node's GPUs in such groups; collective_model.h).
  KernelTime collective_time(CollectiveKind kind, double bytes, int ranks, int ranks_per_node,
                             int groups_per_node = 0) const;
  // One point-to-point message between two GPUs, inside a node or across nodes.
  KernelTime send_recv_time(double bytes, bool inter_node) const;
  const CollectiveModel& collectives() const { return collectives_; }

 private:
  void add_device_phases(const traces::Op& op, const traces::Plan& plan, OpCost* c) const;
  // What prices a copy alone on its link: its latency, the link's rate at this size, and a
  // profile's measured time of it (when `measured` and the profile has one).
  struct CopyPrice {
    double latency_s, GBps;
    std::optional<double> measured_s;
  };
  CopyPrice copy_price(double bytes, bool h2d, bool pinned, bool measured) const;
  void add_host_phase(const traces::Op& op, const traces::Plan& plan, OpCost* c) const;
  double roofline_seconds(double flops, double bytes, const std::string& dtype) const;
  const CollectiveSpec& collective_spec(CollectiveKind kind, CollectiveScope scope) const;
  double curve_kernel_seconds(const traces::Kernel& k, bool backward) const;
  double gemm_call_seconds_for(double flops, double bytes, const std::string& dtype) const;
  KernelTime shaped_attention(const std::vector<int64_t>& shape, const std::string& dtype, bool backward) const;
  KernelTime shaped_kernel_time(const traces::Kernel& k, bool backward) const;
  // model_s corrected by the tables for `sig` when they reach it.
  KernelTime corrected(const traces::OpSignature& sig, double bytes, double model_s) const;
  KernelTime corrected_collective(const traces::OpSignature& sig, double bytes, double model_s) const;  // memoised
  double collective_model_seconds(CollectiveKind kind, double bytes, int ranks, int ranks_per_node) const;

  struct Memo;
  Machine machine_;
  ProfileLookup profile_;
  CollectiveModel collectives_;
  std::shared_ptr<const KernelTable> table_;
  bool tables_derived_ = false;
  std::shared_ptr<Memo> memo_;
  std::vector<ContentionRule> contention_;
};

// The cost model of every simulating subcommand and of calibrate (issue 17): the machine's own
// kernel-time sources (its curves; with gpu.sms its kernel tables and shape-aware model), and a
// measured op profile's entries, when given, winning over them, each profiled time multiplied by
// `profile_scale`. The profile must outlive the model.
std::unique_ptr<HardwareCostModel> make_cost_model(Machine machine, const traces::OpProfile* profile = nullptr,
                                                   double profile_scale = 1);
// --profile: a shipped profile's name (traces/profiles/<name>.json), a file (a path with a '/' or
// ending in .json), or "none" (nullptr). A bad file is an error naming it and the JSON pointer.
std::unique_ptr<const traces::OpProfile> load_op_profile(const std::string& name_or_file);

// The rules of an op profile's provenance "contention" block (`protwin profile` measures them on the
// emulated device, whose compute, copy workers and CPU Adam share the host's cores): compute beside
// the copy streams ("compute_slowdown_with_copies") and beside CPU Adam ("compute_slowdown_with_adam"),
// CPU Adam beside compute ("adam_slowdown_with_compute"), and in a profile the ranks of an N-rank run
// took together, compute beside the rank's collective stream ("compute_slowdown_with_collectives");
// empty when it has none.
std::vector<ContentionRule> contention_rules_from_profile(const nlohmann::json& provenance);

}  // namespace protwin::hw
