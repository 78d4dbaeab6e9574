#include "hwmodels/hardware_cost_model.h"

#include <algorithm>
#include <cmath>

#include "traces/error.h"

namespace protwin::hw {

namespace {

double elements_of(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return shape.empty() ? 0 : n;
}

int elem_bytes(const std::string& dtype) {
  const int b = traces::dtype_bytes(dtype);
  return b > 0 ? b : 4;
}

bool is_memory_bound_kind(const std::string& kind) {
  static const char* const kKinds[] = {"layernorm", "rmsnorm",       "gelu",     "swiglu",
                                       "softmax",   "dropout",       "elementwise",
                                       "cross_entropy", "embedding", "rope"};
  return std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds);
}

int meta_int(const nlohmann::json& j, const char* key, int fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return fallback;
  return static_cast<int>(j[key].get<int64_t>());
}

// Ranks of a plan that share one host's cores and DRAM: meta.gpus over meta.nodes nodes, at most
// a node's GPUs.
int ranks_sharing_host(const traces::Plan& plan, int gpus_per_node) {
  const int per_node = std::max(1, meta_int(plan.meta, "gpus", 1)) / std::max(1, meta_int(plan.meta, "nodes", 1));
  return std::min(std::max(1, per_node), gpus_per_node);
}

}  // namespace

int inter_node_ranks_per_node(int ranks, int gpus_per_node) {
  return ranks > gpus_per_node && ranks % gpus_per_node == 0 ? gpus_per_node : 1;
}

HardwareCostModel::HardwareCostModel(Machine machine, ProfileLookup profile)
    : machine_(std::move(machine)), profile_(std::move(profile)), collectives_(machine_) {}

std::vector<LinkSpec> HardwareCostModel::links() const {
  const HostLinkSpec& l = machine_.host_link;
  const double duplex = l.duplex_fraction_h2d * l.h2d.pinned_GBps + l.duplex_fraction_d2h * l.d2h.pinned_GBps;
  return {{"pcie_h2d", l.h2d.pinned_GBps}, {"pcie_d2h", l.d2h.pinned_GBps}, {"pcie_duplex", duplex}};
}

const DtypeCompute& HardwareCostModel::compute_for(const std::string& dtype) const {
  auto it = machine_.gpu.compute.find(dtype);
  PROTWIN_CHECK(it != machine_.gpu.compute.end(), "machine ", machine_.name,
                ": no /gpu/compute entry for dtype \"", dtype, "\"");
  return it->second;
}

double HardwareCostModel::gemm_tflops(double gflop, const std::string& dtype) const {
  const DtypeCompute& c = compute_for(dtype);
  if (c.gemm_curve.empty() || gflop > c.gemm_curve.last_x()) return c.sustained_tflops;
  return c.gemm_curve.at(gflop);
}

double HardwareCostModel::roofline_seconds(double flops, double bytes, const std::string& dtype) const {
  const double floor = machine_.gpu.launch_floor_us * 1e-6;
  const double t_flops = flops > 0 ? flops / (compute_for(dtype).sustained_tflops * 1e12) : 0;
  const double t_bytes = bytes > 0 ? bytes / (machine_.gpu.hbm_achievable_GBps * 1e9) : 0;
  return std::max({t_flops, t_bytes, floor});
}

// One GEMM call (or one batched call) of `flops` moving `bytes`.
static double gemm_call_seconds(const HardwareCostModel& cm, const Machine& m, double flops,
                                double bytes, const std::string& dtype) {
  const double gflop = flops * 1e-9;
  double t = flops / (cm.gemm_tflops(gflop, dtype) * 1e12);
  const auto it = m.gpu.compute.find(dtype);
  const EfficiencyCurve& curve = it->second.gemm_curve;
  if (!curve.empty() && gflop < curve.first_x())  // latency-bound: the first point's time
    t = std::max(t, curve.first_x() / curve.first_y() * 1e-3);
  const double t_bytes = bytes / (m.gpu.hbm_achievable_GBps * 1e9);
  return std::max({t, t_bytes, m.gpu.launch_floor_us * 1e-6});
}

double HardwareCostModel::gemm_seconds(int64_t m, int64_t n, int64_t k, const std::string& dtype) const {
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  const double bytes = (dm * dk + dk * dn + dm * dn) * elem_bytes(dtype);
  return gemm_call_seconds(*this, machine_, 2 * dm * dn * dk, bytes, dtype);
}

double HardwareCostModel::memory_seconds(double bytes) const {
  const double floor = machine_.gpu.launch_floor_us * 1e-6;
  if (bytes <= 0) return floor;
  return std::max(bytes / (machine_.gpu.hbm_curve.at(bytes) * 1e9), floor);
}

double HardwareCostModel::attention_seconds(const std::vector<int64_t>& shape, const std::string& dtype,
                                            bool flash, bool backward) const {
  PROTWIN_CHECK(shape.size() == 4, "attention kernel: expected shape {batch*heads, seq_q, seq_k, "
                "head_dim}, got ", shape.size(), " dimensions");
  const double bh = static_cast<double>(shape[0]), sq = static_cast<double>(shape[1]),
               sk = static_cast<double>(shape[2]), d = static_cast<double>(shape[3]);
  const double eb = elem_bytes(dtype);
  const double fwd_flops = 4 * bh * sq * sk * d;
  if (flash) {
    // FlashAttention-2 counts backward as 2.5x forward flops (5 GEMMs vs 2).
    const double flops = backward ? 2.5 * fwd_flops : fwd_flops;
    double tflops;
    if (machine_.gpu.attention)
      tflops = backward ? machine_.gpu.attention->flash_bwd_tflops : machine_.gpu.attention->flash_fwd_tflops;
    else
      tflops = gemm_tflops(flops * 1e-9, dtype);  // no flash data: as fast as one GEMM of its size
    return std::max(flops / (tflops * 1e12), machine_.gpu.launch_floor_us * 1e-6);
  }
  // Unfused: S = Q K^T, P = softmax(S), O = P V, each a batched GEMM or a pass over S.
  const double gemm_flops = 2 * bh * sq * sk * d;
  const double gemm_bytes = bh * (sq * d + sk * d + sq * sk) * eb;
  const double t_gemm = gemm_call_seconds(*this, machine_, gemm_flops, gemm_bytes, dtype);
  const double s_bytes = bh * sq * sk * eb;
  if (!backward) return 2 * t_gemm + memory_seconds(2 * s_bytes);
  // dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q; softmax backward reads P and dP, writes dS.
  return 4 * t_gemm + memory_seconds(3 * s_bytes);
}

double HardwareCostModel::kernel_seconds(const traces::Kernel& k, bool backward) const {
  const traces::OpSignature& sig = k.sig;
  // Profiles key a kernel by its forward signature; a non-GEMM kernel's backward is a different
  // kernel, recorded as "<kind>_backward" (GEMM backward calls are GEMMs of their own shapes).
  if (profile_) {
    if (!backward || sig.kind == "gemm") {
      if (auto t = profile_(sig)) return *t;
    } else if (auto t = profile_(traces::OpSignature{sig.kind + "_backward", sig.shape, sig.dtype})) {
      return *t;
    }
  }
  if (sig.kind == "gemm") {
    if (sig.shape.size() == 3) return gemm_seconds(sig.shape[0], sig.shape[1], sig.shape[2], sig.dtype);
    PROTWIN_CHECK(k.flops > 0, "kernel ", sig.key(), ": a gemm needs shape {m, n, k} or flops");
    return gemm_call_seconds(*this, machine_, k.flops, k.bytes, sig.dtype);
  }
  if (sig.kind == "attention" || sig.kind == "flash_attention") {
    if (sig.kind == "flash_attention" && k.flops > 0 && sig.shape.size() != 4)
      return roofline_seconds(k.flops, k.bytes, sig.dtype);
    return attention_seconds(sig.shape, sig.dtype, sig.kind == "flash_attention", backward);
  }
  if (sig.kind == "adam") {
    const double bytes = k.bytes > 0 ? k.bytes : elements_of(sig.shape) * machine_.gpu_adam.bytes_per_param;
    return memory_seconds(bytes);
  }
  double bytes = k.bytes;
  if (bytes <= 0) {
    // Read + write each element (swiglu reads two); backward also reads the saved input.
    const double passes = sig.kind == "swiglu" ? (backward ? 5 : 3) : (backward ? 3 : 2);
    bytes = elements_of(sig.shape) * elem_bytes(sig.dtype) * passes;
  }
  if (is_memory_bound_kind(sig.kind) || k.flops <= 0) return memory_seconds(bytes);
  return roofline_seconds(k.flops, bytes, sig.dtype);
}

double HardwareCostModel::copy_seconds(double bytes, CopyDirection dir, bool pinned,
                                       bool both_directions) const {
  if (bytes <= 0) return 0;
  const HostLinkSpec& l = machine_.host_link;
  const bool h2d = dir == CopyDirection::kH2D;
  if (profile_ && !both_directions) {
    traces::OpSignature sig{std::string(h2d ? "h2d" : "d2h") + (pinned ? "" : "_pageable"),
                            {static_cast<int64_t>(bytes)}, "int8"};
    if (auto t = profile_(sig)) return *t;
  }
  const CopyDirectionSpec& d = h2d ? l.h2d : l.d2h;
  const double rate = pinned ? d.pinned_GBps : d.pageable_GBps;
  const double latency = (pinned ? d.pinned_latency_us : d.pageable_latency_us) * 1e-6;
  const double duplex = both_directions ? (h2d ? l.duplex_fraction_h2d : l.duplex_fraction_d2h) : 1.0;
  return latency + bytes / (rate * l.size_curve.at(bytes) * duplex * 1e9);
}

double HardwareCostModel::cpu_adam_params_per_s(int ranks_sharing_host) const {
  const double ranks = std::max(1, ranks_sharing_host);
  const CpuAdamSpec& a = machine_.cpu_adam;
  const double compute = machine_.host.cores / ranks * a.per_core_params_per_s;
  const double memory = a.dram_efficiency * machine_.host.dram_GBps * 1e9 / a.bytes_per_param / ranks;
  return std::min(compute, memory);
}

double HardwareCostModel::cpu_adam_seconds(double params, int ranks_sharing_host) const {
  if (params <= 0) return 0;
  return machine_.cpu_adam.fixed_overhead_us * 1e-6 + params / cpu_adam_params_per_s(ranks_sharing_host);
}

double HardwareCostModel::device_adam_seconds(double params) const {
  if (params <= 0) return 0;
  return memory_seconds(params * machine_.gpu_adam.bytes_per_param);
}

double HardwareCostModel::host_cast_seconds(double bytes, int ranks_sharing_host) const {
  if (bytes <= 0) return 0;
  return bytes / (machine_.host.dram_GBps * 1e9 / std::max(1, ranks_sharing_host));
}

double HardwareCostModel::host_pass_seconds(const std::string& what, double bytes, double elems,
                                            int ranks_sharing_host) const {
  const HostPassSpec& hp = machine_.host_passes;
  PROTWIN_CHECK(what == "overflow_scan" || what == "unscale" || what == "fp16_copy", "host_pass: attrs.what \"", what,
                "\": expected overflow_scan, unscale or fp16_copy");
  const double ns = what == "overflow_scan" ? hp.overflow_scan_ns_per_elem
                    : what == "unscale"     ? hp.unscale_ns_per_elem
                                            : hp.fp16_copy_ns_per_elem;
  return std::max(host_cast_seconds(bytes, ranks_sharing_host), elems * ns * 1e-9 * std::max(1, ranks_sharing_host));
}

const CollectiveSpec& HardwareCostModel::collective_spec(CollectiveKind kind, CollectiveScope scope) const {
  const CollectiveDomainSpec* d = &machine_.intra_node;
  if (scope == CollectiveScope::kInterNode) {
    PROTWIN_CHECK(machine_.inter_node.has_value(), "machine ", machine_.name,
                  ": no /collectives/inter_node entry for an inter-node collective");
    d = &*machine_.inter_node;
  }
  switch (kind) {
    case CollectiveKind::kAllReduce: return d->all_reduce;
    case CollectiveKind::kReduceScatter: return d->reduce_scatter;
    case CollectiveKind::kAllGather: return d->all_gather;
    case CollectiveKind::kBroadcast: return d->broadcast;
  }
  PROTWIN_ASSERT(false, "unknown collective kind");
}

double HardwareCostModel::collective_seconds(CollectiveKind kind, double bytes, int ranks,
                                             CollectiveScope scope) const {
  if (ranks <= 1 || bytes <= 0) return 0;
  if (scope == CollectiveScope::kInterNode && !machine_.inter_node && machine_.network)
    return collectives_.seconds(kind, bytes, ranks, inter_node_ranks_per_node(ranks, machine_.gpu.count));
  const CollectiveSpec& c = collective_spec(kind, scope);
  return c.alpha_us * 1e-6 + collective_bus_bytes(kind, bytes, ranks) / (c.busbw_GBps * 1e9);
}

double HardwareCostModel::collective_seconds(CollectiveKind kind, double bytes, int ranks, int ranks_per_node,
                                             int groups_per_node) const {
  return collectives_.seconds(kind, bytes, ranks, ranks_per_node, groups_per_node);
}

double HardwareCostModel::send_recv_seconds(double bytes, bool inter_node) const {
  return collectives_.send_recv_seconds(bytes, inter_node);
}

OpCost HardwareCostModel::cost(const traces::Op& op, const traces::Plan& plan) const {
  OpCost c;
  const double bytes = static_cast<double>(op.work.bytes);
  if (op.kind == "h2d" || op.kind == "d2h") {
    const bool h2d = op.kind == "h2d";
    bool pinned = true;
    if (op.attrs.is_object() && op.attrs.contains("pinned") && op.attrs["pinned"].is_boolean()) {
      pinned = op.attrs["pinned"].get<bool>();
    } else {
      for (int t : op.reads)
        for (const auto& ts : plan.tensors)
          if (ts.id == t && ts.home == "pageable") pinned = false;
    }
    if (bytes <= 0) return c;
    const CopyDirectionSpec& d = h2d ? machine_.host_link.h2d : machine_.host_link.d2h;
    const double latency = (pinned ? d.pinned_latency_us : d.pageable_latency_us) * 1e-6;
    double rate = (pinned ? d.pinned_GBps : d.pageable_GBps) * machine_.host_link.size_curve.at(bytes);
    if (profile_) {  // a measured copy of this size sets the transfer's own rate
      traces::OpSignature sig{op.kind + (pinned ? "" : "_pageable"), {op.work.bytes}, "int8"};
      if (auto t = profile_(sig)) {
        if (*t <= latency) { c.fixed = from_seconds(*t); return c; }
        rate = bytes / ((*t - latency) * 1e9);
      }
    }
    c.fixed = from_seconds(latency);
    c.links = {h2d ? kLinkH2D : kLinkD2H, kLinkDuplex, -1};
    c.link_bytes = bytes;
    c.max_GBps = rate;
    return c;
  }
  CollectiveKind kind;
  if (collective_from_string(op.kind, &kind)) {
    const int ranks = op.attrs.is_object() && op.attrs.contains("ranks")
                          ? meta_int(op.attrs, "ranks", 1)
                          : meta_int(plan.meta, "gpus", 1);
    if (ranks <= 1 || bytes <= 0) return c;
    const bool inter = op.attrs.is_object() && op.attrs.value("scope", std::string()) == "inter_node";
    const int per_node = meta_int(op.attrs, "ranks_per_node", 0);
    if (op.attrs.is_object() && op.attrs.contains("ranks_per_node") &&
        !(per_node == ranks && machine_.intra_node.host_staged)) {
      // Placed on the cluster (the 4D-parallel contract): the per-level model decides. A
      // host-staged group inside one node keeps the PCIe-link path below.
      try {
        c.fixed = from_seconds(collectives_.seconds(kind, bytes, ranks, per_node, meta_int(op.attrs, "groups_per_node", 0)));
      } catch (const Error& e) {
        throw Error(traces::describe_op(op) + " attrs.ranks_per_node: " + e.what());
      }
      return c;
    }
    const CollectiveScope scope = inter ? CollectiveScope::kInterNode : CollectiveScope::kIntraNode;
    const bool staged = inter ? machine_.inter_node && machine_.inter_node->host_staged
                              : machine_.intra_node.host_staged;
    if (!staged) {
      c.fixed = from_seconds(collective_seconds(kind, bytes, ranks, scope));
      return c;
    }
    // Host-staged: every rank's bus bytes go over its PCIe link in both directions.
    const CollectiveSpec& spec = collective_spec(kind, scope);
    c.fixed = from_seconds(spec.alpha_us * 1e-6);
    c.links = {kLinkH2D, kLinkD2H, kLinkDuplex};
    c.link_bytes = collective_bus_bytes(kind, bytes, ranks);
    c.max_GBps = spec.busbw_GBps;
    return c;
  }
  if (op.kind == "send_recv") {
    const bool inter = op.attrs.is_object() && op.attrs.value("scope", std::string()) == "inter_node";
    c.fixed = from_seconds(send_recv_seconds(bytes, inter));
    return c;
  }
  if (op.kind == "adam_cpu") {
    const int ranks = ranks_sharing_host(plan, machine_.gpu.count);
    double t = cpu_adam_seconds(static_cast<double>(op.work.params), ranks);
    // FSDP's torch.optim.Adam on CPU tensors is slower than the SIMD CPU Adam (hardware.md §3.5).
    if (op.attrs.is_object() && op.attrs.value("impl", std::string()) == "torch") t *= machine_.cpu_adam.torch_slowdown;
    c.fixed = from_seconds(t);
    return c;
  }
  if (op.kind == "host_cast" || op.kind == "host_pass") {  // CPU passes over host memory
    const int ranks = ranks_sharing_host(plan, machine_.gpu.count);
    c.fixed = from_seconds(op.kind == "host_cast"
                               ? host_cast_seconds(bytes, ranks)
                               : host_pass_seconds(op.attrs.is_object() ? op.attrs.value("what", std::string()) : "",
                                                   bytes, static_cast<double>(op.work.params), ranks));
    return c;
  }
  if (op.kind == "adam_device") {
    c.fixed = from_seconds(device_adam_seconds(static_cast<double>(op.work.params)));
    return c;
  }
  if (op.kind == "alloc" || op.kind == "free") return c;
  const std::vector<traces::Kernel> kernels = traces::kernels_of(op.attrs, std::function<std::string()>([&] { return traces::describe_op(op) + " attrs"; }));
  if (!kernels.empty()) {
    double t = 0;
    for (const auto& k : kernels) t += static_cast<double>(k.count) * kernel_seconds(k, op.kind == "backward");
    c.fixed = from_seconds(t);
    return c;
  }
  if (op.work.flops > 0 || op.work.bytes > 0) {
    std::string dtype = "fp16";
    if (op.attrs.is_object() && op.attrs.contains("dtype") && op.attrs["dtype"].is_string())
      dtype = op.attrs["dtype"].get<std::string>();
    else if (plan.meta.is_object() && plan.meta.contains("dtype") && plan.meta["dtype"].is_string())
      dtype = plan.meta["dtype"].get<std::string>();
    c.fixed = from_seconds(roofline_seconds(op.work.flops, bytes, dtype));
  }
  return c;
}

}  // namespace protwin::hw
