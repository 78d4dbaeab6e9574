// Machine: one node type as data (DESIGN §5). Machines live in hwmodels/machines/<name>.json,
// are embedded into protwin_hw at build time, and can also be read from any file.
//
// Every number carries its unit in its key (_GBps, _tflops, _us, _bytes, ...; counts and
// fractions are unitless) and a provenance entry: "provenance": {"/json/pointer": {"kind":
// peak|measured|proxy|derived|assumed, "source": "...", "note"?}}. An entry covers the value at its
// pointer and everything below it; the longest matching pointer wins.
//
// The raw JSON is kept in Machine::json so that overrides (--set) and `protwin machine NAME --json`
// round-trip exactly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/efficiency_curve.h"

namespace protwin::hw {

inline constexpr const char* kMachineFormat = "protwin.machine";
inline constexpr int kMachineVersion = 1;

// One datatype's matmul throughput. gemm_curve: achieved TFLOPS vs GFLOP per call (may be empty:
// then sustained_tflops is used for every size).
struct DtypeCompute {
  double peak_tflops = 0;
  double sustained_tflops = 0;
  EfficiencyCurve gemm_curve;
};

struct GpuAttention {
  double flash_fwd_tflops = 0;
  double flash_bwd_tflops = 0;
};

// PyTorch CUDACachingAllocator constants (hardware.md §3.7).
struct AllocatorSpec {
  int64_t round_bytes = 0, small_alloc_max_bytes = 0, small_segment_bytes = 0;
  int64_t mid_alloc_max_bytes = 0, large_segment_bytes = 0, large_round_bytes = 0;
  double cuda_malloc_us = 0, cuda_free_us = 0;
  double fragmentation_fraction = 0;
};

struct GpuSpec {
  std::string name;
  int count = 0;
  int64_t memory_bytes = 0, usable_memory_bytes = 0;
  bool p2p = false;
  std::map<std::string, DtypeCompute> compute;  // "fp32" (no TF32), "tf32", "fp16", "bf16"
  double hbm_peak_GBps = 0, hbm_achievable_GBps = 0;
  EfficiencyCurve hbm_curve;                    // GB/s vs bytes moved by one kernel
  double launch_floor_us = 0;                   // shortest eager op (back-to-back tiny kernels)
  int sms = 0;                                  // streaming multiprocessors; 0: no shape-aware model
  double kernel_floor_us = 0;                   // shortest GPU-side kernel; 0: launch_floor_us
  std::optional<GpuAttention> attention;        // FlashAttention throughput, when known
  AllocatorSpec allocator;
};

struct HostSpec {
  std::string cpu;
  int sockets = 0, cores = 0;
  int64_t memory_bytes = 0;
  double dram_peak_GBps = 0, dram_GBps = 0;     // dram_GBps: STREAM-like achievable
};

struct CopyDirectionSpec {
  double pinned_GBps = 0, pageable_GBps = 0;
  double pinned_latency_us = 0, pageable_latency_us = 0;
};

struct HostLinkSpec {
  std::string name;
  double peak_GBps = 0;
  CopyDirectionSpec h2d, d2h;
  double duplex_fraction_h2d = 1, duplex_fraction_d2h = 1;  // rate kept when both directions run
  EfficiencyCurve size_curve;                   // fraction of the rate vs bytes per copy
};

struct CpuAdamSpec {
  double per_core_params_per_s = 0;
  double dram_efficiency = 0;                   // fraction of dram_GBps Adam's traffic achieves
  double bytes_per_param = 0;
  double fixed_overhead_us = 0;
  double torch_slowdown = 1;                    // torch.optim.Adam on CPU is this much slower
};

// The optimizer's CPU passes beside CPU Adam (DeepSpeed's overflow scan, unscale and fp16 copy;
// plan ops host_pass), measured as the runtime runs them: nanoseconds per fp32 element with the
// whole host. 0 (the section absent): no measurement, the DRAM-bandwidth bound alone prices them.
struct HostPassSpec {
  double overflow_scan_ns_per_elem = 0;
  double unscale_ns_per_elem = 0;
  double fp16_copy_ns_per_elem = 0;
};

// The CPU cost of issuing GPU work (section "host_dispatch"; DESIGN §4, host dispatch), measured
// from PyTorch profiler traces (protwin import-kineto --host-dispatch) or the runtime (protwin
// profile). Absent, or enabled false (--no-host-dispatch): no host thread is simulated.
struct HostDispatchSpec {
  bool enabled = false;
  double eager_op_us = 0;           // one ATen op's dispatch without autograd recording (backward), launch excluded
  double eager_op_autograd_us = 0;  // the same while autograd records the graph (forward, recompute)
  double backward_op_us = 0;        // one autograd-engine node launching one kernel (backward), launch excluded
  double kernel_launch_us = 0;      // cudaLaunchKernel
  double copy_call_us = 0;          // cudaMemcpyAsync
  double collective_call_us = 0;    // a c10d collective's host side (NCCL enqueue)
  double optimizer_launch_us = 0;   // one fused / multi-tensor optimizer launch
  double module_hook_us = 0;        // one Python hook call (module or parameter hook) of a system
  int launch_queue_depth = 1024;    // unfinished launches before the host blocks
  // false: no separate host thread issues the work; each stream's own thread issues its ops
  // (protwin's runtime on the emulated device), so only the two runtime costs below apply.
  bool host_thread = true;
  // Such a runtime's own work (protwin profile, runtime/profile/runtime_overhead.h): per plan op
  // (waking the op's stream thread, the executor's bookkeeping), paid on the op's stream just
  // before it; and per step (starting the stream threads, the step's setup), before the first op.
  double runtime_op_us = 0;
  double runtime_step_us = 0;
};

struct GpuAdamSpec {
  double bytes_per_param = 0;
};

struct CollectiveSpec {
  double alpha_us = 0;
  double busbw_GBps = 0;
};

// How a node's GPUs are wired. kSwitch (NVSwitch, a PCIe switch): any subgroup keeps the full
// per-GPU busbw. kMesh (direct NVLink between every pair, e.g. HGX H100 4-GPU): a group of r of
// the node's G GPUs can only use the links to its r-1 peers, (r-1)/(G-1) of the bandwidth.
enum class IntraFabric { kSwitch, kMesh };

// A point-to-point copy between two GPUs (pipeline activations): alpha + bytes / GBps, GBps for
// one GPU pair in one direction.
struct SendRecvSpec {
  double alpha_us = 0;
  double GBps = 0;
};

// NCCL-tests definitions: busbw of all-reduce is 2(n-1)/n S / t, of all-gather and
// reduce-scatter (n-1)/n S / t (S the full buffer).
struct CollectiveDomainSpec {
  bool host_staged = false;                     // no P2P: traffic goes GPU -> host -> GPU over PCIe
  CollectiveSpec all_reduce, reduce_scatter, all_gather, broadcast;
  IntraFabric fabric = IntraFabric::kSwitch;    // "fabric": "switch" (default) | "mesh"
  std::optional<SendRecvSpec> send_recv;        // absent: a send is a 2-rank broadcast
  // SMs one collective kernel holds while it runs: NCCL launches one CTA per ring channel, and
  // beside a GEMM's full waves each CTA takes an SM of its own (sim/engine/contention.h,
  // collective_sm_rules). 0 ("ring_channels" absent): not known, compute is not slowed.
  int ring_channels = 0;
};

// The network between nodes of a cluster (hwmodels/collective_model.h uses it): every node has
// nics_per_node NICs of nic_Gbps line rate; NCCL reaches `efficiency` of the line rate. Latency
// follows NCCL's own tuning model: hop_latency_us per inter-node step of a ring or tree.
struct NetworkSpec {
  int nics_per_node = 0;
  double nic_Gbps = 0;                          // one NIC, one direction, Gbit/s
  double efficiency = 0;                        // achieved busbw / aggregate line rate
  double hop_latency_us = 0;                    // per inter-node step
  double send_recv_alpha_us = 0;                // one point-to-point message across nodes

  // GB/s one node moves to the network at the achieved rate (all NICs).
  double node_GBps() const { return nics_per_node * nic_Gbps / 8.0 * efficiency; }
  // GB/s of one NIC at the achieved rate.
  double nic_GBps() const { return nic_Gbps / 8.0 * efficiency; }
};

// The measured kernel tables a machine prices its kernels with (hwmodels/kernel_table.h):
// names of hwmodels/kernel_tables/*.json. measured_on: the machine the tables were measured on
// when it is another one (the tables' corrections then carry over to this machine's model:
// "derived"); empty for this machine. flat_regime: GEMMs no table point reaches but in the model's
// flat regime take the nearby flat-regime points' correction (kernel_table.h; issue #18).
// memory_regime: memory-bound kernels larger than a table's largest take those kernels' correction.
struct KernelTablesSpec {
  bool enabled = true;
  std::vector<std::string> names;
  std::string measured_on;
  bool flat_regime = true;
  bool memory_regime = true;
};

struct Machine {
  std::string name, description;
  std::string source;                           // "embedded:<name>" or the file path
  GpuSpec gpu;
  HostSpec host;
  HostLinkSpec host_link;
  CpuAdamSpec cpu_adam;
  HostPassSpec host_passes;
  HostDispatchSpec host_dispatch;               // "host_dispatch" (optional)
  GpuAdamSpec gpu_adam;
  CollectiveDomainSpec intra_node;
  std::optional<CollectiveDomainSpec> inter_node;
  std::optional<NetworkSpec> network;           // "network": clusters of nodes (optional)
  KernelTablesSpec kernel_tables;               // "kernel_tables" (optional)
  nlohmann::json json;                          // the full document, overrides applied

  // The provenance entry covering a JSON pointer (longest matching prefix); null if none.
  nlohmann::json provenance_of(const std::string& pointer) const;
  // The GPU's throughput in `dtype`; a dtype it lacks is an error naming the machine.
  const DtypeCompute& compute_for(const std::string& dtype) const;
};

// Names of the embedded machines, sorted.
std::vector<std::string> machine_names();
// The embedded JSON text of a machine; nullptr if there is none of that name.
const char* embedded_machine_json(const std::string& name);

// Parses and validates a machine document. `source` names it in errors ("a100-server.json").
Machine machine_from_json(const nlohmann::json& j, const std::string& source);

// An embedded machine by name, or a file when the argument contains '/' or ends in ".json".
// Unknown names are an error listing the known ones. Overrides ("path.to.field=value") are
// applied before validation.
Machine load_machine(const std::string& name_or_path,
                     const std::vector<std::string>& overrides = {});
// The raw document of load_machine (no overrides, not validated); `source` gets its name.
nlohmann::json load_machine_json(const std::string& name_or_path, std::string* source = nullptr);

}  // namespace protwin::hw
