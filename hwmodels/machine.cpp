#include "hwmodels/machine.h"

#include <algorithm>
#include <memory>

#include "hwmodels/machine_edit.h"
#include "traces/error.h"
#include "traces/embedded_files.h"
#include "traces/json_reader.h"

namespace protwin::hw {

using traces::JsonNode;

namespace detail {
// Compiled in at build time from hwmodels/machines/*.json (hwmodels/machines.cmake).
const std::vector<traces::EmbeddedFile>& embedded_machines();
}  // namespace detail

namespace {

// GPUs per node and host cores a machine may have: far beyond any machine, far below int.
constexpr int64_t kMaxGpusPerNode = 4096, kMaxCores = 1 << 20;

const char* const kProvenanceKinds[] = {"peak", "measured", "proxy", "derived", "assumed"};

bool is_kind(const std::string& k) {
  return std::find(std::begin(kProvenanceKinds), std::end(kProvenanceKinds), k) !=
         std::end(kProvenanceKinds);
}

nlohmann::json find_provenance(const nlohmann::json& prov, const std::string& pointer) {
  const nlohmann::json* best = nullptr;
  size_t best_len = 0;
  if (!prov.is_object()) return nullptr;
  for (auto it = prov.begin(); it != prov.end(); ++it) {
    if (covers(it.key(), pointer) && (best == nullptr || it.key().size() > best_len)) {
      best = &it.value();
      best_len = it.key().size();
    }
  }
  return best ? *best : nlohmann::json(nullptr);
}

// Every number and boolean (the values a simulation depends on) needs a provenance entry.
void check_leaves(const nlohmann::json& v, const std::string& pointer, const nlohmann::json& prov,
                  const std::string& source) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (pointer.empty() && (it.key() == "provenance" || it.key() == "version")) continue;
      check_leaves(it.value(), pointer + "/" + traces::pointer_token(it.key()), prov, source);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      check_leaves(v[i], pointer + "/" + std::to_string(i), prov, source);
  } else if (v.is_number() || v.is_boolean()) {
    PROTWIN_CHECK(!find_provenance(prov, pointer).is_null(), source, ":", pointer,
                  ": no provenance entry\nhint: add \"", pointer,
                  "\": {\"kind\": \"peak|measured|proxy|derived|assumed\", \"source\": \"...\"} "
                  "to /provenance");
  }
}

void check_provenance(const JsonNode& root, const std::string& source) {
  const JsonNode prov = root.at("provenance");
  if (!prov.is_object()) prov.fail("expected an object of JSON pointer -> {kind, source}");
  for (auto it = prov.raw().begin(); it != prov.raw().end(); ++it) {
    const JsonNode e = prov.at(it.key());
    const std::string kind = e.get_string("kind");
    if (!is_kind(kind))
      e.at("kind").fail("expected one of peak, measured, proxy, derived, assumed, got \"" + kind +
                        "\"");
    if (e.get_string("source").empty()) e.at("source").fail("expected a non-empty source");
    bool resolves = false;
    try {
      resolves = !it.key().empty() && it.key()[0] == '/' &&
                 root.raw().contains(nlohmann::json::json_pointer(it.key()));
    } catch (const nlohmann::json::exception&) {  // not a JSON pointer: resolves nothing
    }
    if (!resolves) e.fail("points to nothing in the machine");
  }
  check_leaves(root.raw(), "", prov.raw(), source);
}

DtypeCompute read_dtype(const JsonNode& n) {
  n.check_keys({"peak_tflops", "sustained_tflops", "gemm_curve"});
  DtypeCompute d;
  d.peak_tflops = n.get_positive_number("peak_tflops");
  d.sustained_tflops = n.get_positive_number("sustained_tflops");
  if (auto c = n.find("gemm_curve")) d.gemm_curve = EfficiencyCurve::from_json(*c, "gflop", "tflops");
  return d;
}

AllocatorSpec read_allocator(const JsonNode& n) {
  n.check_keys({"round_bytes", "small_alloc_max_bytes", "small_segment_bytes", "mid_alloc_max_bytes",
                "large_segment_bytes", "large_round_bytes", "cuda_malloc_us", "cuda_free_us",
                "fragmentation_fraction"});
  AllocatorSpec a;
  a.round_bytes = n.get_nonneg_int("round_bytes");
  a.small_alloc_max_bytes = n.get_nonneg_int("small_alloc_max_bytes");
  a.small_segment_bytes = n.get_nonneg_int("small_segment_bytes");
  a.mid_alloc_max_bytes = n.get_nonneg_int("mid_alloc_max_bytes");
  a.large_segment_bytes = n.get_nonneg_int("large_segment_bytes");
  a.large_round_bytes = n.get_nonneg_int("large_round_bytes");
  a.cuda_malloc_us = n.get_nonneg_number("cuda_malloc_us");
  a.cuda_free_us = n.get_nonneg_number("cuda_free_us");
  a.fragmentation_fraction = n.get_nonneg_number("fragmentation_fraction");
  return a;
}

GpuSpec read_gpu(const JsonNode& n) {
  n.check_keys({"name", "count", "memory_bytes", "usable_memory_bytes", "p2p", "compute", "hbm", "launch_floor_us",
                "sms", "kernel_floor_us", "attention", "allocator"});
  GpuSpec g;
  g.name = n.get_string("name");
  g.count = static_cast<int>(n.get_int_in("count", 1, kMaxGpusPerNode));
  g.memory_bytes = n.get_nonneg_int("memory_bytes");
  g.usable_memory_bytes = n.get_nonneg_int("usable_memory_bytes");
  if (g.usable_memory_bytes > g.memory_bytes)
    n.at("usable_memory_bytes").fail("expected at most memory_bytes (" +
                                     std::to_string(g.memory_bytes) + ")");
  g.p2p = n.at("p2p").as_bool();
  const JsonNode compute = n.at("compute");
  if (!compute.is_object()) compute.fail("expected an object of dtype -> {peak_tflops, ...}");
  for (auto it = compute.raw().begin(); it != compute.raw().end(); ++it)
    g.compute[it.key()] = read_dtype(compute.at(it.key()));
  for (const char* required : {"fp32", "fp16", "bf16"})
    compute.at(required);  // fails with "missing required field"
  const JsonNode hbm = n.at("hbm");
  hbm.check_keys({"peak_GBps", "achievable_GBps", "curve"});
  g.hbm_peak_GBps = hbm.get_positive_number("peak_GBps");
  g.hbm_achievable_GBps = hbm.get_positive_number("achievable_GBps");
  g.hbm_curve = EfficiencyCurve::from_json(hbm.at("curve"), "bytes", "GBps");
  g.launch_floor_us = n.get_nonneg_number("launch_floor_us");
  if (n.has("sms")) g.sms = static_cast<int>(n.get_int_in("sms", 1, 100000));
  if (n.has("kernel_floor_us")) g.kernel_floor_us = n.get_positive_number("kernel_floor_us");
  if (auto a = n.find("attention")) {
    a->check_keys({"flash_fwd_tflops", "flash_bwd_tflops"});
    g.attention = GpuAttention{a->get_positive_number("flash_fwd_tflops"),
                               a->get_positive_number("flash_bwd_tflops")};
  }
  g.allocator = read_allocator(n.at("allocator"));
  return g;
}

HostSpec read_host(const JsonNode& n) {
  n.check_keys({"cpu", "sockets", "cores", "memory_bytes", "dram_peak_GBps", "dram_GBps"});
  HostSpec h;
  h.cpu = n.get_string("cpu");
  h.sockets = static_cast<int>(n.get_int_in("sockets", 0, kMaxCores));
  h.cores = static_cast<int>(n.get_int_in("cores", 1, kMaxCores));
  h.memory_bytes = n.get_nonneg_int("memory_bytes");
  h.dram_peak_GBps = n.get_positive_number("dram_peak_GBps");
  h.dram_GBps = n.get_positive_number("dram_GBps");
  return h;
}

CopyDirectionSpec read_direction(const JsonNode& n) {
  n.check_keys({"pinned_GBps", "pageable_GBps", "pinned_latency_us", "pageable_latency_us"});
  CopyDirectionSpec d;
  d.pinned_GBps = n.get_positive_number("pinned_GBps");
  d.pageable_GBps = n.get_positive_number("pageable_GBps");
  d.pinned_latency_us = n.get_nonneg_number("pinned_latency_us");
  d.pageable_latency_us = n.get_nonneg_number("pageable_latency_us");
  return d;
}

double fraction(const JsonNode& n, const std::string& key) {
  const double v = n.get_positive_number(key);
  if (v > 1) n.at(key).fail("expected a fraction in (0, 1]");
  return v;
}

HostLinkSpec read_host_link(const JsonNode& n) {
  n.check_keys({"name", "peak_GBps", "h2d", "d2h", "duplex_fraction", "size_curve"});
  HostLinkSpec l;
  l.name = n.get_string("name");
  l.peak_GBps = n.get_positive_number("peak_GBps");
  l.h2d = read_direction(n.at("h2d"));
  l.d2h = read_direction(n.at("d2h"));
  const JsonNode duplex = n.at("duplex_fraction");
  duplex.check_keys({"h2d", "d2h"});
  l.duplex_fraction_h2d = fraction(duplex, "h2d");
  l.duplex_fraction_d2h = fraction(duplex, "d2h");
  l.size_curve = EfficiencyCurve::from_json(n.at("size_curve"), "bytes", "fraction");
  return l;
}

CollectiveSpec read_collective(const JsonNode& n) {
  n.check_keys({"alpha_us", "busbw_GBps"});
  return {n.get_nonneg_number("alpha_us"), n.get_positive_number("busbw_GBps")};
}

CollectiveDomainSpec read_domain(const JsonNode& n) {
  n.check_keys({"host_staged", "all_reduce", "reduce_scatter", "all_gather", "broadcast", "fabric", "send_recv",
                "ring_channels"});
  CollectiveDomainSpec d;
  if (n.has("ring_channels")) d.ring_channels = static_cast<int>(n.get_int_in("ring_channels", 0, 1024));
  d.host_staged = n.at("host_staged").as_bool();
  d.all_reduce = read_collective(n.at("all_reduce"));
  d.reduce_scatter = read_collective(n.at("reduce_scatter"));
  d.all_gather = read_collective(n.at("all_gather"));
  d.broadcast = read_collective(n.at("broadcast"));
  const std::string fabric = n.get_string("fabric", "switch");
  if (fabric == "mesh") d.fabric = IntraFabric::kMesh;
  else if (fabric != "switch")
    n.at("fabric").fail("expected \"switch\" or \"mesh\", got \"" + fabric + "\"");
  if (auto sr = n.find("send_recv")) {
    sr->check_keys({"alpha_us", "GBps"});
    d.send_recv = SendRecvSpec{sr->get_nonneg_number("alpha_us"), sr->get_positive_number("GBps")};
  }
  return d;
}

NetworkSpec read_network(const JsonNode& n) {
  n.check_keys({"nics_per_node", "nic_Gbps", "efficiency", "hop_latency_us", "send_recv_alpha_us"});
  NetworkSpec s;
  s.nics_per_node = static_cast<int>(n.get_int_in("nics_per_node", 1, kMaxGpusPerNode));
  s.nic_Gbps = n.get_positive_number("nic_Gbps");
  s.efficiency = fraction(n, "efficiency");
  s.hop_latency_us = n.get_nonneg_number("hop_latency_us");
  s.send_recv_alpha_us = n.get_nonneg_number("send_recv_alpha_us");
  return s;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

HostDispatchSpec read_host_dispatch(const JsonNode& n) {
  n.check_keys({"enabled", "eager_op_us", "eager_op_autograd_us", "backward_op_us", "kernel_launch_us", "copy_call_us",
                "collective_call_us", "optimizer_launch_us", "module_hook_us", "launch_queue_depth", "host_thread",
                "runtime_op_us", "runtime_step_us"});
  HostDispatchSpec h;
  h.enabled = n.get_bool("enabled", true);
  h.eager_op_us = n.get_nonneg_number("eager_op_us");
  h.eager_op_autograd_us = n.get_nonneg_number("eager_op_autograd_us");
  h.backward_op_us = n.get_nonneg_number("backward_op_us");
  h.kernel_launch_us = n.get_nonneg_number("kernel_launch_us");
  h.copy_call_us = n.get_nonneg_number("copy_call_us");
  h.collective_call_us = n.get_nonneg_number("collective_call_us");
  h.optimizer_launch_us = n.get_nonneg_number("optimizer_launch_us");
  h.module_hook_us = n.get_nonneg_number("module_hook_us");
  h.launch_queue_depth = static_cast<int>(n.get_int_in("launch_queue_depth", 1, 1000000));
  h.host_thread = n.get_bool("host_thread", true);
  h.runtime_op_us = n.has("runtime_op_us") ? n.get_nonneg_number("runtime_op_us") : 0;
  h.runtime_step_us = n.has("runtime_step_us") ? n.get_nonneg_number("runtime_step_us") : 0;
  return h;
}

}  // namespace

std::vector<std::string> machine_names() {
  std::vector<std::string> out;
  for (const auto& f : detail::embedded_machines()) out.push_back(f.name);
  std::sort(out.begin(), out.end());
  return out;
}

const char* embedded_machine_json(const std::string& name) {
  for (const auto& f : detail::embedded_machines())
    if (name == f.name) return f.text;
  return nullptr;
}

nlohmann::json Machine::provenance_of(const std::string& pointer) const {
  return json.contains("provenance") ? find_provenance(json["provenance"], pointer) : nullptr;
}

const DtypeCompute& Machine::compute_for(const std::string& dtype) const {
  auto it = gpu.compute.find(dtype);
  PROTWIN_CHECK(it != gpu.compute.end(), "machine ", name, ": no /gpu/compute entry for dtype \"", dtype, "\"");
  return it->second;
}

Machine machine_from_json(const nlohmann::json& j, const std::string& source) {
  const JsonNode root(&j, std::make_shared<const std::string>(source), "");
  if (!root.is_object()) root.fail("expected a machine object");
  root.check_format(kMachineFormat, kMachineVersion, "machine");
  root.check_keys({"format", "version", "name", "description", "gpu", "host", "host_link", "cpu_adam",
                   "host_passes", "host_dispatch", "gpu_adam", "collectives", "network", "kernel_tables",
                   "provenance"});
  Machine m;
  m.source = source;
  m.name = root.get_string("name");
  m.description = root.get_string("description", "");
  m.gpu = read_gpu(root.at("gpu"));
  m.host = read_host(root.at("host"));
  m.host_link = read_host_link(root.at("host_link"));
  const JsonNode ca = root.at("cpu_adam");
  ca.check_keys({"per_core_params_per_s", "dram_efficiency", "bytes_per_param", "fixed_overhead_us", "torch_slowdown"});
  m.cpu_adam.per_core_params_per_s = ca.get_positive_number("per_core_params_per_s");
  m.cpu_adam.dram_efficiency = fraction(ca, "dram_efficiency");
  m.cpu_adam.bytes_per_param = ca.get_positive_number("bytes_per_param");
  m.cpu_adam.fixed_overhead_us = ca.get_nonneg_number("fixed_overhead_us");
  m.cpu_adam.torch_slowdown = ca.has("torch_slowdown") ? ca.get_positive_number("torch_slowdown") : 1.0;
  if (auto hp = root.find("host_passes")) {
    hp->check_keys({"overflow_scan_ns_per_elem", "unscale_ns_per_elem", "fp16_copy_ns_per_elem"});
    m.host_passes.overflow_scan_ns_per_elem = hp->get_nonneg_number("overflow_scan_ns_per_elem");
    m.host_passes.unscale_ns_per_elem = hp->get_nonneg_number("unscale_ns_per_elem");
    m.host_passes.fp16_copy_ns_per_elem = hp->get_nonneg_number("fp16_copy_ns_per_elem");
  }
  if (auto hd = root.find("host_dispatch")) m.host_dispatch = read_host_dispatch(*hd);
  root.at("gpu_adam").check_keys({"bytes_per_param"});
  m.gpu_adam.bytes_per_param = root.at("gpu_adam").get_positive_number("bytes_per_param");
  const JsonNode coll = root.at("collectives");
  coll.check_keys({"intra_node", "inter_node"});
  m.intra_node = read_domain(coll.at("intra_node"));
  if (m.intra_node.ring_channels > 0 && m.gpu.sms <= 0)
    coll.at("intra_node").at("ring_channels").fail("needs /gpu/sms, the GPU's SM count that the channels take a share of");
  if (m.intra_node.ring_channels > 0 && m.intra_node.ring_channels >= m.gpu.sms)
    coll.at("intra_node").at("ring_channels").fail("must be below /gpu/sms (" + std::to_string(m.gpu.sms) +
                                                   "): a collective's CTAs cannot take every SM");
  if (auto inter = coll.find("inter_node")) m.inter_node = read_domain(*inter);
  if (auto net = root.find("network")) m.network = read_network(*net);
  if (auto kt = root.find("kernel_tables")) {
    kt->check_keys({"enabled", "names", "measured_on", "flat_regime", "memory_regime"});
    m.kernel_tables.enabled = kt->get_bool("enabled", true);
    m.kernel_tables.flat_regime = kt->get_bool("flat_regime", true);
    m.kernel_tables.memory_regime = kt->get_bool("memory_regime", true);
    const JsonNode names = kt->at("names");
    for (size_t i = 0; i < names.size(); ++i) m.kernel_tables.names.push_back(names.at(i).as_string());
    m.kernel_tables.measured_on = kt->get_string("measured_on", "");
  }
  check_provenance(root, source);
  m.json = j;
  return m;
}

nlohmann::json load_machine_json(const std::string& name_or_path, std::string* source) {
  if (looks_like_path(name_or_path)) {
    if (source) *source = name_or_path;
    return traces::JsonDocument::load(name_or_path).json();
  }
  const char* text = embedded_machine_json(name_or_path);
  if (text == nullptr) {
    throw Error("unknown machine '" + name_or_path + "'; known machines: " +
                protwin::detail::join(machine_names()) +
                "\nhint: pass a path to a machine file (with '/' or ending in .json) to load one "
                "from disk");
  }
  const std::string name = name_or_path + ".json";
  if (source) *source = name;
  return traces::JsonDocument::parse(text, name).json();
}

Machine load_machine(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  std::string source;
  nlohmann::json j = load_machine_json(name_or_path, &source);
  for (const auto& o : overrides) apply_override(j, o);
  try {
    return machine_from_json(j, source);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal || overrides.empty()) throw;
    // The value that broke the machine came from a flag: blame the --set whose field the error
    // names ("file:/gpu/count: ..."), else all of them.
    const std::string msg = e.what();
    for (const auto& o : overrides) {
      std::string ptr = source + ":/";
      for (char c : o.substr(0, o.find('='))) ptr += c == '.' ? '/' : c;
      if (msg.compare(0, ptr.size(), ptr) == 0 && (msg.size() == ptr.size() || msg[ptr.size()] == ':' || msg[ptr.size()] == '/'))
        throw Error("--set " + o + ": " + msg.substr(source.size() + 1));
    }
    std::string flags;
    for (const auto& o : overrides) flags += (flags.empty() ? "--set " : " --set ") + o;
    throw Error(flags + ": the machine is invalid with these values: " + msg);
  }
}

}  // namespace protwin::hw
