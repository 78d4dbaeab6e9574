#include "hwmodels/hardware_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "hwmodels/kernel_model.h"
#include "traces/block_signature.h"
#include "traces/error.h"
#include "traces/kernel_kinds.h"

namespace protwin::hw {

namespace kk = traces::kernel_kinds;  // the kernel-kind registry

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

traces::OpSignature collective_sig(const std::string& kind, double bytes, int ranks, int ranks_per_node) {
  return {kind, {std::llround(bytes), ranks, std::min(ranks_per_node, ranks)}, "int8"};
}

// A copy is pageable when op.pinned is false or, unset, a read tensor lives in "pageable".
bool copy_is_pinned(const traces::Op& op, const traces::Plan& plan) {
  if (op.pinned) return *op.pinned;
  for (int t : op.reads)
    for (const auto& ts : plan.tensors)
      if (ts.id == t && ts.home == "pageable") return false;
  return true;
}


// A kernel's bytes: its own, else read + write each element (swiglu reads two), and in backward
// also the saved input.
double kernel_bytes(const traces::Kernel& k, bool backward) {
  if (k.bytes > 0) return k.bytes;
  const double passes = k.sig.kind == kk::kSwiglu ? (backward ? 5 : 3) : (backward ? 3 : 2);
  return elements_of(k.sig.shape) * elem_bytes(k.sig.dtype) * passes;
}

// Ranks per node of a legacy inter-node group (group.inter_node without group.ranks_per_node) on
// a machine with only a /network (collective_time with kInterNode).
int inter_node_ranks_per_node(int ranks, int gpus_per_node) {
  return ranks > gpus_per_node && ranks % gpus_per_node == 0 ? gpus_per_node : 1;
}

// The op's time on its stream and what priced it; an op that costs nothing has no source.
void priced(OpCost* c, const KernelTime& t) {
  c->stream()->time = from_seconds(t.seconds);
  c->source = t.seconds > 0 ? t.source : KernelSource::kNone;
}

// Priced kernels by their whole identity (signature, direction, work), so a search prices each
// distinct kernel once.
struct MemoKey {
  traces::OpSignature sig;
  bool backward;
  double bytes, flops;
  bool operator==(const MemoKey& o) const {
    return backward == o.backward && bytes == o.bytes && flops == o.flops && sig == o.sig;
  }
};

void hash_mix(size_t& h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

size_t kernel_hash(const traces::OpSignature& sig, double bytes, double flops, bool backward) {
  size_t h = std::hash<std::string>()(sig.kind) ^ (std::hash<std::string>()(sig.dtype) << 1);
  for (int64_t d : sig.shape) hash_mix(h, static_cast<uint64_t>(d));
  hash_mix(h, std::hash<double>()(bytes));
  hash_mix(h, std::hash<double>()(flops));
  hash_mix(h, backward);
  return h;
}

struct MemoKeyHash {
  size_t operator()(const MemoKey& k) const { return kernel_hash(k.sig, k.bytes, k.flops, k.backward); }
};

// A priced kernel set: its kernels, direction and summed time.
struct PricedSet {
  traces::KernelSet kernels;
  bool backward;
  KernelTime time;
};

// The GEMM model a KernelTable keeps for its lookups, over its own copy of the machine.
KernelGemmModel gemm_model_of(const Machine& machine) {
  auto m = std::make_shared<const Machine>(machine);
  KernelGemmModel g;
  g.flat_regime = machine.kernel_tables.flat_regime;
  g.memory_regime = machine.kernel_tables.memory_regime;
  g.seconds = [m](const traces::OpSignature& sig) {
    const auto& s = sig.shape;
    try {
      if (sig.kind == kk::kGemm && s.size() == 3) return gemm_model_seconds(*m, 1, s[0], s[1], s[2], sig.dtype);
      if (sig.kind == kk::kBmm && s.size() == 4) return gemm_model_seconds(*m, s[0], s[1], s[2], s[3], sig.dtype);
    } catch (const Error&) {
    }
    return std::numeric_limits<double>::quiet_NaN();  // not a GEMM, or a dtype the GPU lacks
  };
  g.sustained_flops = [m](const std::string& dtype) {
    const auto it = m->gpu.compute.find(dtype);
    return it == m->gpu.compute.end() ? 0.0 : it->second.sustained_tflops * 1e12;
  };
  return g;
}

// The same tensor cores: as many SMs and the same dense peak in every half-precision dtype both
// machines list (the 40 GB and 80 GB A100-SXM4: 108 SMs, 312 TFLOPS; hardware.md §2.2).
bool same_tensor_cores(const Machine& a, const Machine& b) {
  if (a.gpu.sms <= 0 || a.gpu.sms != b.gpu.sms) return false;
  bool any = false;
  for (const char* dtype : {"fp16", "bf16"}) {
    const auto x = a.gpu.compute.find(dtype), y = b.gpu.compute.find(dtype);
    if (x == a.gpu.compute.end() || y == b.gpu.compute.end()) continue;
    if (x->second.peak_tflops != y->second.peak_tflops) return false;
    any = true;
  }
  return any;
}

}  // namespace

std::unique_ptr<HardwareCostModel> make_cost_model(Machine machine, const traces::OpProfile* profile,
                                                   double profile_scale) {
  ProfileLookup lookup;
  if (profile)
    lookup = [profile, profile_scale](const traces::OpSignature& s) -> std::optional<double> {
      if (auto t = profile->lookup(s)) return *t * profile_scale;
      return std::nullopt;
    };
  return std::make_unique<HardwareCostModel>(std::move(machine), std::move(lookup));
}

std::vector<ContentionRule> contention_rules_from_profile(const nlohmann::json& provenance) {
  std::vector<ContentionRule> rules;
  if (!provenance.is_object() || !provenance.contains("contention")) return rules;
  const auto& c = provenance["contention"];
  auto add = [&](const char* key, const char* stream, std::vector<std::string> beside) {
    if (c.contains(key) && c[key].is_number()) rules.push_back({stream, std::move(beside), c[key].get<double>()});
  };
  add("compute_slowdown_with_copies", "compute", {"h2d", "d2h"});
  add("compute_slowdown_with_adam", "compute", {"cpu_optim"});
  add("adam_slowdown_with_compute", "cpu_optim", {"compute"});
  add("compute_slowdown_with_collectives", "compute", {"collective"});  // N-rank profiles only
  // copy_slowdown_with_compute is not used: a copy's time is its link transfer, which the link
  // model shares; only its latency is a fixed time.
  return rules;
}

std::unique_ptr<const traces::OpProfile> load_op_profile(const std::string& p) {
  if (p == "none") return nullptr;
  const bool file = p.find('/') != std::string::npos || (p.size() > 5 && p.substr(p.size() - 5) == ".json");
  return std::make_unique<const traces::OpProfile>(file ? traces::OpProfile::load(p) : traces::shipped_profile(p));
}

struct HardwareCostModel::Memo {
  std::mutex mu;
  std::unordered_map<MemoKey, KernelTime, MemoKeyHash> times;
  std::unordered_multimap<size_t, PricedSet> sets;  // by the hash of their kernels and direction
};

// Each distinct kernel set is summed once: the ops of a plan, and the plans of a search, share a
// few dozen sets. The sets this thread found last are kept by address (a plan's ops ask for the
// same few again and again): one at the same address and equal to it (always compared, so a set
// at an address another had is never mistaken) skips the hash and the lock.
KernelTime HardwareCostModel::kernel_set_time(const traces::KernelSet& ks, bool backward) const {
  struct Recent { const traces::KernelSet* at; bool backward; const PricedSet* set; };  // set: a memo node
  thread_local std::shared_ptr<Memo> recent_memo;  // holds the memo the entries point into
  thread_local std::array<Recent, 16> recent{};
  thread_local size_t next = 0;
  if (recent_memo != memo_) recent_memo = memo_, recent = {};
  for (const Recent& r : recent)
    if (r.at == &ks && r.backward == backward && r.set->kernels == ks) return r.set->time;
  auto remember = [&](const PricedSet& set) { return recent[next++ % recent.size()] = {&ks, backward, &set}, set.time; };
  size_t h = backward;
  for (const auto& k : ks) {
    hash_mix(h, kernel_hash(k.sig, k.bytes, k.flops, backward));
    hash_mix(h, static_cast<uint64_t>(k.count));
  }
  {
    std::lock_guard<std::mutex> lock(memo_->mu);
    for (auto [it, end] = memo_->sets.equal_range(h); it != end; ++it)
      if (it->second.backward == backward && it->second.kernels == ks) return remember(it->second);
  }
  KernelTime sum{0, KernelSource::kNone};
  for (const auto& k : ks) {
    const KernelTime t = kernel_time(k, backward);
    sum.seconds += static_cast<double>(k.count) * t.seconds;
    sum.source = sum.source == KernelSource::kNone || sum.source == t.source ? t.source : KernelSource::kMixed;
  }
  std::lock_guard<std::mutex> lock(memo_->mu);
  return remember(memo_->sets.emplace(h, PricedSet{ks, backward, sum})->second);
}

HardwareCostModel::HardwareCostModel(Machine machine, ProfileLookup profile)
    : machine_(std::move(machine)), profile_(std::move(profile)), collectives_(machine_),
      memo_(std::make_shared<Memo>()) {
  const KernelTablesSpec& kt = machine_.kernel_tables;
  if (!kt.enabled || kt.names.empty() || !has_shape_model(machine_)) return;
  std::vector<const traces::OpProfile*> tables;
  for (const auto& name : kt.names) {
    try {
      tables.push_back(&hw::kernel_table(name));
    } catch (const Error& e) {
      throw Error("machine " + machine_.name + ": /kernel_tables/names: " + e.what());
    }
  }
  if (kt.measured_on.empty() || kt.measured_on == machine_.name) {
    set_kernel_tables(tables);
    return;
  }
  // Tables measured on another machine: their corrections to that machine's model carry over.
  Machine source = load_machine(kt.measured_on);
  source.kernel_tables.enabled = false;
  const HardwareCostModel source_cost(std::move(source));
  table_ = std::make_shared<KernelTable>(
      tables, [&source_cost](const traces::OpSignature& sig, double bytes) { return source_cost.model_seconds(sig, bytes); },
      same_tensor_cores(machine_, source_cost.machine()) ? KernelTable::Carry::kGemmsAbsolute
                                                         : KernelTable::Carry::kShapeOnly,
      gemm_model_of(machine_));
  tables_derived_ = true;
}

void HardwareCostModel::set_kernel_tables(const std::vector<const traces::OpProfile*>& tables) {
  memo_ = std::make_shared<Memo>();
  tables_derived_ = false;
  table_.reset();
  if (tables.empty() || !has_shape_model(machine_)) return;
  table_ = std::make_shared<KernelTable>(
      tables, [this](const traces::OpSignature& sig, double bytes) { return model_seconds(sig, bytes); },
      KernelTable::Carry::kAbsolute, gemm_model_of(machine_));
}

double HardwareCostModel::collective_model_seconds(CollectiveKind kind, double bytes, int ranks,
                                                   int ranks_per_node) const {
  if (ranks_per_node >= ranks && !machine_.intra_node.host_staged) {
    const CollectiveSpec& c = collective_spec(kind, CollectiveScope::kIntraNode);
    return c.alpha_us * 1e-6 + collective_bus_bytes(kind, bytes, ranks) / (c.busbw_GBps * 1e9);
  }
  return collectives_.seconds(kind, bytes, ranks, ranks_per_node);
}

double HardwareCostModel::model_seconds(const traces::OpSignature& sig, double bytes) const {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  const auto& s = sig.shape;
  try {
    if (sig.kind == kk::kGemm && s.size() == 3) return gemm_model_seconds(machine_, 1, s[0], s[1], s[2], sig.dtype);
    if (sig.kind == kk::kBmm && s.size() == 4) return gemm_model_seconds(machine_, s[0], s[1], s[2], s[3], sig.dtype);
    if (traces::is_memory_bound_kind(sig.kind) || sig.kind.rfind("elementwise.", 0) == 0)
      return bytes > 0 ? memory_model_seconds(machine_, bytes) : kNone;
    if (traces::is_collective_kind(sig.kind) && s.size() == 3 && s[1] >= 2) {
      const int ranks = static_cast<int>(s[1]), per_node = static_cast<int>(s[2]);
      if (sig.kind == kk::kSendRecv) return collectives_.send_recv_seconds(bytes, per_node < ranks);
      CollectiveKind kind;
      if (collective_from_string(sig.kind, &kind)) return collective_model_seconds(kind, bytes, ranks, per_node);
    }
  } catch (const Error&) {
    return kNone;  // e.g. a dtype or a network the machine does not have
  }
  return kNone;
}

KernelTime HardwareCostModel::corrected_collective(const traces::OpSignature& sig, double bytes, double model_s) const {
  if (!table_) return {model_s, KernelSource::kModel};
  // The correction (a scan of the table's points) depends on the signature alone: memoised as a ratio.
  MemoKey key{sig, false, bytes, -1.0};
  {
    std::lock_guard<std::mutex> lock(memo_->mu);
    auto it = memo_->times.find(key);
    if (it != memo_->times.end()) return {model_s * it->second.seconds, it->second.source};
  }
  const KernelTime t = corrected(sig, bytes, model_s);
  std::lock_guard<std::mutex> lock(memo_->mu);
  memo_->times.emplace(std::move(key), KernelTime{model_s > 0 ? t.seconds / model_s : 1.0, t.source});
  return t;
}

KernelTime HardwareCostModel::corrected(const traces::OpSignature& sig, double bytes, double model_s) const {
  if (const auto c = table_ ? table_->correction(sig, bytes) : std::nullopt)
    return {model_s * c->ratio, tables_derived_ ? KernelSource::kDerived
                                : c->exact      ? KernelSource::kMeasured
                                : c->extrapolated ? KernelSource::kExtrapolated
                                                  : KernelSource::kInterpolated};
  return {model_s, KernelSource::kModel};
}

KernelTime HardwareCostModel::gemm_time(int64_t batch, int64_t m, int64_t n, int64_t k, const std::string& dtype) const {
  machine_.compute_for(dtype);  // a dtype the GPU lacks is an error naming the machine
  PROTWIN_CHECK(batch >= 1 && m >= 1 && n >= 1 && k >= 1, "gemm: every dimension must be >= 1, got ", batch, "x", m,
                "x", n, "x", k);
  const double bytes = static_cast<double>(batch) * (static_cast<double>(m) * k + static_cast<double>(k) * n +
                                                     static_cast<double>(m) * n) * elem_bytes(dtype);
  if (!has_shape_model(machine_)) {
    return {gemm_call_seconds_for(static_cast<double>(batch) * 2.0 * m * n * k, bytes, dtype), KernelSource::kCurve};
  }
  const traces::OpSignature sig = batch == 1 ? traces::OpSignature{kk::kGemm, {m, n, k}, dtype}
                                             : traces::OpSignature{kk::kBmm, {batch, m, n, k}, dtype};
  return corrected(sig, bytes, gemm_model_seconds(machine_, batch, m, n, k, dtype));
}

KernelTime HardwareCostModel::collective_time(const std::string& kind, double bytes, int ranks,
                                              int ranks_per_node) const {
  PROTWIN_CHECK(ranks >= 2, "collective: expected at least 2 ranks, got ", ranks);
  PROTWIN_CHECK(bytes > 0, "collective: expected bytes > 0, got ", bytes);
  if (kind == kk::kSendRecv) {
    const bool inter = ranks_per_node < ranks;
    return corrected(collective_sig(kind, bytes, 2, inter ? 1 : 2), bytes, collectives_.send_recv_seconds(bytes, inter));
  }
  CollectiveKind k;
  PROTWIN_CHECK(collective_from_string(kind, &k), "collective \"", kind,
                "\": expected all_reduce, all_gather, reduce_scatter, broadcast or send_recv");
  return corrected(collective_sig(kind, bytes, ranks, ranks_per_node), bytes,
                   collective_model_seconds(k, bytes, ranks, ranks_per_node));
}

std::vector<LinkSpec> HardwareCostModel::links() const {
  const HostLinkSpec& l = machine_.host_link;
  const double duplex = l.duplex_fraction_h2d * l.h2d.pinned_GBps + l.duplex_fraction_d2h * l.d2h.pinned_GBps;
  return {{"pcie_h2d", l.h2d.pinned_GBps}, {"pcie_d2h", l.d2h.pinned_GBps}, {"pcie_duplex", duplex}};
}

double HardwareCostModel::gemm_tflops(double gflop, const std::string& dtype) const {
  const DtypeCompute& c = machine_.compute_for(dtype);
  if (c.gemm_curve.empty() || gflop > c.gemm_curve.last_x()) return c.sustained_tflops;
  return c.gemm_curve.at(gflop);
}

double HardwareCostModel::roofline_seconds(double flops, double bytes, const std::string& dtype) const {
  const double floor = machine_.gpu.launch_floor_us * 1e-6;
  const double t_flops = flops > 0 ? flops / (machine_.compute_for(dtype).sustained_tflops * 1e12) : 0;
  const double t_bytes = bytes > 0 ? bytes / (machine_.gpu.hbm_achievable_GBps * 1e9) : 0;
  return std::max({t_flops, t_bytes, floor});
}

// One GEMM call (or one batched call) of `flops` moving `bytes`.
double HardwareCostModel::gemm_call_seconds_for(double flops, double bytes, const std::string& dtype) const {
  const double gflop = flops * 1e-9;
  double t = flops / (gemm_tflops(gflop, dtype) * 1e12);
  const EfficiencyCurve& curve = machine_.compute_for(dtype).gemm_curve;
  if (!curve.empty() && gflop < curve.first_x())  // latency-bound: the first point's time
    t = std::max(t, curve.first_x() / curve.first_y() * 1e-3);
  const double t_bytes = bytes / (machine_.gpu.hbm_achievable_GBps * 1e9);
  return std::max({t, t_bytes, machine_.gpu.launch_floor_us * 1e-6});
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
  if (!flash && has_shape_model(machine_)) return shaped_attention(shape, dtype, backward).seconds;
  const double bh = static_cast<double>(shape[0]), sq = static_cast<double>(shape[1]),
               sk = static_cast<double>(shape[2]), d = static_cast<double>(shape[3]);
  const double eb = elem_bytes(dtype);
  const double fwd_flops = 4 * bh * sq * sk * d;
  if (flash) {
    // FlashAttention-2 counts backward as 2.5x forward flops (5 GEMMs vs 2).
    const double flops = backward ? 2.5 * fwd_flops : fwd_flops;
    const auto& att = machine_.gpu.attention;  // none: as fast as one GEMM of its size
    const double tflops = !att      ? gemm_tflops(flops * 1e-9, dtype)
                          : backward ? att->flash_bwd_tflops
                                     : att->flash_fwd_tflops;
    return std::max(flops / (tflops * 1e12), machine_.gpu.launch_floor_us * 1e-6);
  }
  // Unfused: the batched GEMMs S = Q K^T and O = P V (backward dP = dO V^T, dV = P^T dO,
  // dQ = dS K, dK = dS^T Q). The softmax between them is a kernel of its own in every workload
  // (sim/workload "softmax"), priced there: not again here.
  const double gemm_flops = 2 * bh * sq * sk * d;
  const double gemm_bytes = bh * (sq * d + sk * d + sq * sk) * eb;
  const double t_gemm = gemm_call_seconds_for(gemm_flops, gemm_bytes, dtype);
  return (backward ? 4 : 2) * t_gemm;
}

KernelTime HardwareCostModel::shaped_attention(const std::vector<int64_t>& shape, const std::string& dtype,
                                               bool backward) const {
  // Unfused: the batched GEMMs S = Q K^T [sq x sk over d] and O = P V [sq x d over sk]; backward
  // dP = dO V^T [sq x sk over d], dV = P^T dO [sk x d over sq], dQ = dS K [sq x d over sk],
  // dK = dS^T Q [sk x d over sq]. The softmax (and its backward) is a kernel of its own in every
  // workload (sim/workload "softmax"), priced there, so not here (it once was: charged twice).
  const int64_t bh = shape[0], sq = shape[1], sk = shape[2], d = shape[3];
  std::vector<KernelTime> parts = {gemm_time(bh, sq, sk, d, dtype), gemm_time(bh, sq, d, sk, dtype)};
  if (backward) {
    parts.push_back(gemm_time(bh, sk, d, sq, dtype));
    parts.push_back(gemm_time(bh, sk, d, sq, dtype));
  }
  KernelTime total{0, KernelSource::kProfile};
  for (const auto& p : parts) {
    total.seconds += p.seconds;
    total.source = std::max(total.source, p.source);  // the least trusted part names the whole
  }
  return total;
}

KernelTime HardwareCostModel::kernel_time(const traces::Kernel& k, bool backward) const {
  const traces::OpSignature& sig = k.sig;
  // Profiles key a kernel by its forward signature; a non-GEMM kernel's backward is a different
  // kernel, recorded as "<kind>_backward" (GEMM backward calls are GEMMs of their own shapes).
  if (profile_) {
    if (!backward || sig.kind == kk::kGemm) {
      if (auto t = profile_(sig)) return {*t, KernelSource::kProfile};
    } else if (auto t = profile_(traces::OpSignature{sig.kind + "_backward", sig.shape, sig.dtype})) {
      return {*t, KernelSource::kProfile};
    }
  }
  if (!has_shape_model(machine_)) return {curve_kernel_seconds(k, backward), KernelSource::kCurve};
  MemoKey key{sig, backward, k.bytes, k.flops};
  {
    std::lock_guard<std::mutex> lock(memo_->mu);
    auto it = memo_->times.find(key);
    if (it != memo_->times.end()) return it->second;
  }
  const KernelTime t = shaped_kernel_time(k, backward);
  std::lock_guard<std::mutex> lock(memo_->mu);
  memo_->times.emplace(std::move(key), t);
  return t;
}

KernelTime HardwareCostModel::shaped_kernel_time(const traces::Kernel& k, bool backward) const {
  const traces::OpSignature& sig = k.sig;
  if (sig.kind == kk::kGemm && sig.shape.size() == 3) return gemm_time(1, sig.shape[0], sig.shape[1], sig.shape[2], sig.dtype);
  if (sig.kind == kk::kAttention && sig.shape.size() == 4) {
    PROTWIN_CHECK(sig.shape[0] >= 1 && sig.shape[1] >= 1 && sig.shape[2] >= 1 && sig.shape[3] >= 1, "kernel ",
                  sig.key(), ": every dimension must be >= 1");
    return shaped_attention(sig.shape, sig.dtype, backward);
  }
  if (sig.kind == kk::kGemm || sig.kind == kk::kAttention || sig.kind == kk::kFlashAttention || sig.kind == kk::kAdam)
    return {curve_kernel_seconds(k, backward), KernelSource::kModel};
  const double bytes = kernel_bytes(k, backward);
  if (traces::is_memory_bound_kind(sig.kind) || k.flops <= 0) {
    const traces::OpSignature mem{traces::is_memory_bound_kind(sig.kind) ? sig.kind : "elementwise", sig.shape, sig.dtype};
    return corrected(mem, bytes, memory_model_seconds(machine_, bytes));
  }
  return {roofline_seconds(k.flops, bytes, sig.dtype), KernelSource::kModel};
}

double HardwareCostModel::curve_kernel_seconds(const traces::Kernel& k, bool backward) const {
  const traces::OpSignature& sig = k.sig;
  if (sig.kind == kk::kGemm) {
    if (sig.shape.size() == 3) return gemm_time(1, sig.shape[0], sig.shape[1], sig.shape[2], sig.dtype).seconds;
    PROTWIN_CHECK(k.flops > 0, "kernel ", sig.key(), ": a gemm needs shape {m, n, k} or flops");
    return gemm_call_seconds_for(k.flops, k.bytes, sig.dtype);
  }
  if (sig.kind == kk::kAttention || sig.kind == kk::kFlashAttention) {
    if (sig.kind == kk::kFlashAttention && k.flops > 0 && sig.shape.size() != 4)
      return roofline_seconds(k.flops, k.bytes, sig.dtype);
    return attention_seconds(sig.shape, sig.dtype, sig.kind == "flash_attention", backward);
  }
  if (sig.kind == kk::kAdam) {
    const double bytes = k.bytes > 0 ? k.bytes : elements_of(sig.shape) * machine_.gpu_adam.bytes_per_param;
    return memory_seconds(bytes);
  }
  const double bytes = kernel_bytes(k, backward);
  if (traces::is_memory_bound_kind(sig.kind) || k.flops <= 0) return memory_seconds(bytes);
  return roofline_seconds(k.flops, bytes, sig.dtype);
}

HardwareCostModel::CopyPrice HardwareCostModel::copy_price(double bytes, bool h2d, bool pinned, bool measured) const {
  const CopyDirectionSpec& d = h2d ? machine_.host_link.h2d : machine_.host_link.d2h;
  CopyPrice p{(pinned ? d.pinned_latency_us : d.pageable_latency_us) * 1e-6,
              (pinned ? d.pinned_GBps : d.pageable_GBps) * machine_.host_link.size_curve.at(bytes), std::nullopt};
  if (profile_ && measured)
    p.measured_s = profile_({std::string(h2d ? "h2d" : "d2h") + (pinned ? "" : "_pageable"),
                             {static_cast<int64_t>(bytes)}, "int8"});
  return p;
}

double HardwareCostModel::copy_seconds(double bytes, CopyDirection dir, bool pinned,
                                       bool both_directions) const {
  if (bytes <= 0) return 0;
  const HostLinkSpec& l = machine_.host_link;
  const bool h2d = dir == CopyDirection::kH2D;
  const CopyPrice p = copy_price(bytes, h2d, pinned, !both_directions);
  if (p.measured_s) return *p.measured_s;
  const double duplex = both_directions ? (h2d ? l.duplex_fraction_h2d : l.duplex_fraction_d2h) : 1.0;
  return p.latency_s + bytes / (p.GBps * duplex * 1e9);
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

double HardwareCostModel::device_adam_seconds(double params, double bytes_per_param) const {
  if (params <= 0) return 0;
  return memory_seconds(params * (bytes_per_param > 0 ? bytes_per_param : machine_.gpu_adam.bytes_per_param));
}

double HardwareCostModel::host_cast_seconds(double bytes, int ranks_sharing_host) const {
  if (bytes <= 0) return 0;
  return bytes / (machine_.host.dram_GBps * 1e9 / std::max(1, ranks_sharing_host));
}

double HardwareCostModel::host_pass_seconds(traces::OpSubKind pass, double bytes, double elems,
                                            int ranks_sharing_host) const {
  using traces::OpSubKind;
  const HostPassSpec& hp = machine_.host_passes;
  PROTWIN_CHECK(traces::sub_kind_fits(traces::OpKind::kHostPass, pass) && pass != OpSubKind::kNone,
                "host_pass: sub-kind \"", traces::to_string(pass), "\": expected ",
                traces::sub_kinds_text(traces::OpKind::kHostPass));
  const double ns = pass == OpSubKind::kOverflowScan ? hp.overflow_scan_ns_per_elem
                    : pass == OpSubKind::kUnscale    ? hp.unscale_ns_per_elem
                                                     : hp.fp16_copy_ns_per_elem;
  return std::max(host_cast_seconds(bytes, ranks_sharing_host), elems * ns * 1e-9 * std::max(1, ranks_sharing_host));
}

const CollectiveSpec& HardwareCostModel::collective_spec(CollectiveKind kind, CollectiveScope scope) const {
  if (scope == CollectiveScope::kIntraNode) return spec_of(machine_.intra_node, kind);
  PROTWIN_CHECK(machine_.inter_node.has_value(), "machine ", machine_.name,
                ": no /collectives/inter_node entry for an inter-node collective");
  return spec_of(*machine_.inter_node, kind);
}

KernelTime HardwareCostModel::collective_time(CollectiveKind kind, double bytes, int ranks, CollectiveScope scope) const {
  if (ranks <= 1 || bytes <= 0) return {0, KernelSource::kNone};
  if (scope == CollectiveScope::kInterNode && !machine_.inter_node && machine_.network)
    return {collectives_.seconds(kind, bytes, ranks, inter_node_ranks_per_node(ranks, machine_.gpu.count)),
            KernelSource::kModel};
  const CollectiveSpec& c = collective_spec(kind, scope);
  const double model = c.alpha_us * 1e-6 + collective_bus_bytes(kind, bytes, ranks) / (c.busbw_GBps * 1e9);
  if (!table_ || scope != CollectiveScope::kIntraNode) return {model, KernelSource::kModel};
  return corrected_collective(collective_sig(collective_name(kind), bytes, ranks, ranks), bytes, model);
}

KernelTime HardwareCostModel::collective_time(CollectiveKind kind, double bytes, int ranks, int ranks_per_node,
                                              int groups_per_node) const {
  const double model = collectives_.seconds(kind, bytes, ranks, ranks_per_node, groups_per_node);
  if (!table_ || ranks <= 1 || bytes <= 0) return {model, KernelSource::kModel};
  return corrected_collective(collective_sig(collective_name(kind), bytes, ranks, ranks_per_node), bytes, model);
}

KernelTime HardwareCostModel::send_recv_time(double bytes, bool inter_node) const {
  const double model = collectives_.send_recv_seconds(bytes, inter_node);
  if (!table_ || bytes <= 0) return {model, KernelSource::kModel};
  return corrected_collective(collective_sig("send_recv", bytes, 2, inter_node ? 1 : 2), bytes, model);
}

OpCost HardwareCostModel::cost(const traces::Op& op, const traces::Plan& plan) const {
  const HostDispatchSpec& h = machine_.host_dispatch;
  const bool host_thread = h.enabled && h.host_thread;
  OpCost c;
  if (host_thread) add_host_phase(op, plan, &c);
  add_device_phases(op, plan, &c);
  Phase& stream = *c.stream();
  // CPU work (CPU Adam, host passes): launches that need its result wait for it.
  if (host_thread && traces::is_cpu_work(op.kind)) stream.on = PhaseOn::kCpu;
  // A runtime whose stream threads issue their own ops: its work per op (and per step, before the
  // first op) delays the op on its own stream, serial with it.
  if (h.enabled && (h.runtime_op_us > 0 || h.runtime_step_us > 0))
    stream.time += from_seconds((h.runtime_op_us + (op.id == 0 ? h.runtime_step_us : 0)) * 1e-6);
  return c;
}

// What the rank's host thread spends issuing `op` (machine host_dispatch): every kernel is one
// eager ATen op (dispatch, with autograd recording in forward and recompute; an autograd-engine
// node in backward) plus its cudaLaunchKernel; a copy is one cudaMemcpyAsync, a collective one c10d call, a device optimizer
// step its multi-tensor launches; op.host adds the system's own host work (hooks, extra small
// ops and copies; sim/offload/compiler/host_work.h). CPU work (CPU Adam, host passes) is not issued by it.
// A copy from or to pageable memory blocks the host until it is done (CUDA runtime API, "API
// synchronization behavior"); so does op.host_sync.
void HardwareCostModel::add_host_phase(const traces::Op& op, const traces::Plan& plan, OpCost* c) const {
  const HostDispatchSpec& h = machine_.host_dispatch;
  if (traces::is_cpu_work(op.kind) || op.kind == traces::OpKind::kAlloc || op.kind == traces::OpKind::kFree ||
      op.kind == traces::OpKind::kArrive)
    return;
  double us = 0;
  bool sync = op.host_sync;
  if (op.kind == traces::OpKind::kH2D || op.kind == traces::OpKind::kD2H) {
    us = h.copy_call_us;
    sync = sync || !copy_is_pinned(op, plan);
  } else if (traces::is_collective(op.kind) || op.kind == traces::OpKind::kSendRecv) {
    us = h.collective_call_us;
  } else if (op.kind == traces::OpKind::kAdamDevice) {
    us = h.optimizer_launch_us * static_cast<double>(std::max<int>(1, op.launches));
  } else {
    // Forward and recompute record autograd; backward kernels run as autograd-engine nodes.
    const double op_us = op.kind == traces::OpKind::kForward || op.kind == traces::OpKind::kRecompute ? h.eager_op_autograd_us
                         : op.kind == traces::OpKind::kBackward                         ? h.backward_op_us
                                                                         : h.eager_op_us;
    const double per_kernel = op_us + h.kernel_launch_us;
    int64_t n = 0;
    if (op.kernels >= 0) {
      for (const auto& k : plan.kernels_of(op)) n += k.count;
    } else if (op.work.flops > 0 || op.work.bytes > 0) {
      n = 1;
    }
    us = static_cast<double>(n) * per_kernel;
  }
  const traces::HostWork& w = op.host;
  us += w.hooks * h.module_hook_us + w.eager_ops * (h.eager_op_us + h.kernel_launch_us) + w.copies * h.copy_call_us;
  c->add(on_host(SimTime(std::max<int64_t>(1, static_cast<int64_t>(std::llround(us * 1e3)))), sync));
}

// The op's time on its stream (a phase always, zero for an op that costs nothing) and, for a copy
// or a host-staged collective, its transfer over the links.
void HardwareCostModel::add_device_phases(const traces::Op& op, const traces::Plan& plan, OpCost* c) const {
  c->add(on_device(SimTime{}));
  const double bytes = static_cast<double>(op.work.bytes);
  if (op.kind == traces::OpKind::kH2D || op.kind == traces::OpKind::kD2H) {
    const bool h2d = op.kind == traces::OpKind::kH2D;
    const bool pinned = copy_is_pinned(op, plan);
    if (bytes <= 0) return;
    const CopyPrice p = copy_price(bytes, h2d, pinned, true);
    double rate = p.GBps;
    c->source = KernelSource::kCurve;
    if (p.measured_s) {  // a measured copy of this size sets the transfer's own rate
      c->source = KernelSource::kProfile;
      if (*p.measured_s <= p.latency_s) {
        c->stream()->time = from_seconds(*p.measured_s);
        return;
      }
      rate = bytes / ((*p.measured_s - p.latency_s) * 1e9);
    }
    c->stream()->time = from_seconds(p.latency_s);
    c->add(over_links({h2d ? kLinkH2D : kLinkD2H, kLinkDuplex, -1}, bytes, rate));
    return;
  }
  CollectiveKind kind;
  if (traces::is_collective(op.kind) && collective_from_string(traces::to_string(op.kind), &kind)) {
    const traces::CollectiveGroup& g = op.group;
    const int ranks = g.ranks > 0 ? g.ranks : plan.ranks();
    if (ranks <= 1 || bytes <= 0) return;
    if (g.ranks_per_node > 0 && !(g.ranks_per_node == ranks && machine_.intra_node.host_staged)) {
      // Placed on the cluster (the 4D-parallel contract): the per-level model decides. A
      // host-staged group inside one node keeps the PCIe-link path below.
      try {
        priced(c, collective_time(kind, bytes, ranks, g.ranks_per_node, g.groups_per_node));
      } catch (const Error& e) {
        throw Error(traces::describe_op(op) + " group.ranks_per_node: " + e.what());
      }
      return;
    }
    const CollectiveScope scope = g.inter_node ? CollectiveScope::kInterNode : CollectiveScope::kIntraNode;
    const bool staged = g.inter_node ? machine_.inter_node && machine_.inter_node->host_staged
                                     : machine_.intra_node.host_staged;
    if (!staged) {
      priced(c, collective_time(kind, bytes, ranks, scope));
      return;
    }
    // Host-staged: every rank's bus bytes go over its PCIe link in both directions.
    const CollectiveSpec& spec = collective_spec(kind, scope);
    c->stream()->time = from_seconds(spec.alpha_us * 1e-6);
    c->source = KernelSource::kModel;
    c->add(over_links({kLinkH2D, kLinkD2H, kLinkDuplex}, collective_bus_bytes(kind, bytes, ranks), spec.busbw_GBps));
    return;
  }
  if (op.kind == traces::OpKind::kSendRecv) {
    priced(c, send_recv_time(bytes, op.group.inter_node));
    return;
  }
  if (traces::is_cpu_work(op.kind)) {  // CPU Adam and CPU passes over host memory, on the rank's share of it
    const int ranks = plan.ranks_per_host(machine_.gpu.count);
    const double params = static_cast<double>(op.work.params);
    double t = op.kind == traces::OpKind::kHostCast   ? host_cast_seconds(bytes, ranks)
               : op.kind == traces::OpKind::kHostPass ? host_pass_seconds(op.sub_kind, bytes, params, ranks)
                                                      : cpu_adam_seconds(params, ranks);
    // FSDP's torch.optim.Adam on CPU tensors is slower than the SIMD CPU Adam (hardware.md §3.5).
    if (op.kind == traces::OpKind::kAdamCpu && op.sub_kind == traces::OpSubKind::kTorch)
      t *= machine_.cpu_adam.torch_slowdown;
    priced(c, {t, KernelSource::kCurve});
    return;
  }
  if (op.kind == traces::OpKind::kAdamDevice) {
    // bytes_per_param: the step as a framework's code does it (its passes over grads, states and
    // params); else the machine's fused device Adam.
    priced(c, {device_adam_seconds(static_cast<double>(op.work.params), op.bytes_per_param), KernelSource::kCurve});
    return;
  }
  if (op.kind == traces::OpKind::kAlloc || op.kind == traces::OpKind::kFree || op.kind == traces::OpKind::kArrive) return;
  // A profile that timed this whole block as the runtime runs it (traces/block_signature.h) wins
  // over the sum of its kernels: the block also runs calls the kernel list leaves out (issue 22).
  if (profile_)
    if (const auto block = traces::block_signature(plan, op))
      if (const auto t = profile_(*block)) {
        priced(c, {*t, KernelSource::kProfile});
        return;
      }
  if (const traces::KernelSet& ks = plan.kernels_of(op); !ks.empty()) {
    priced(c, kernel_set_time(ks, op.kind == traces::OpKind::kBackward));
    return;
  }
  if (op.work.flops > 0 || op.work.bytes > 0)
    priced(c, {roofline_seconds(op.work.flops, bytes, plan.dtype.empty() ? "fp16" : plan.dtype), KernelSource::kCurve});
}

}  // namespace protwin::hw
