#include "traces/plan.h"

#include "traces/json_splice.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <ostream>
#include <memory>
#include <unordered_map>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/json_reader.h"

namespace protwin::traces {

static_assert(sizeof(Op) <= 224, "Op stays small: plans hold millions of them");

namespace {

constexpr const char* kTensorKindNames[] = {"param_chunk", "grad_chunk", "optim_state",
                                            "activation",  "buffer",     "other"};
static_assert(std::size(kTensorKindNames) == static_cast<size_t>(TensorKind::kOther) + 1, "a name per TensorKind");

constexpr const char* kOpKinds[] = {"forward",   "backward",       "recompute",  "h2d",       "d2h",
                                    "all_gather", "reduce_scatter", "all_reduce", "broadcast", "send_recv",
                                    "adam_cpu",  "adam_device",    "host_cast",  "host_pass", "alloc",
                                    "free",      "arrive"};
static_assert(std::size(kOpKinds) == static_cast<size_t>(OpKind::kArrive) + 1, "a name per OpKind");

constexpr const char* kSubKinds[] = {"",        "param_chunk",   "activation", "updated_params",
                                     "grad_roundtrip", "grad_chunk", "partial_grad_chunk", "grad_fp32",
                                     "overflow_scan",  "unscale",    "fp16_copy",          "torch"};
static_assert(std::size(kSubKinds) == static_cast<size_t>(OpSubKind::kTorch) + 1, "a name per OpSubKind");

// The enum value whose name (names[i], from `first` on) is `s`.
template <typename E, size_t N>
bool enum_named(const char* const (&names)[N], size_t first, const std::string& s, E* out) {
  for (size_t i = first; i < N; ++i)
    if (s == names[i]) {
      *out = static_cast<E>(i);
      return true;
    }
  return false;
}

// "forward, backward, ..." for messages.
std::string op_kinds_text() {
  std::string out;
  for (const char* k : kOpKinds) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::vector<int> read_int_list(const JsonNode& n) {
  std::vector<int> out;
  out.reserve(n.size());
  for (size_t i = 0; i < n.size(); ++i) out.push_back(static_cast<int>(n.at(i).as_int()));
  return out;
}

PoolSpec read_pool(const JsonNode& n) {
  PoolSpec p;
  p.name = n.get_string("name");
  p.capacity = Bytes(n.get_int_in("capacity_bytes", 0, kMaxPlanBytes));
  p.initial = Bytes(n.has("initial_bytes") ? n.get_int_in("initial_bytes", 0, kMaxPlanBytes) : 0);
  if (p.initial > p.capacity)
    n.at("initial_bytes").fail("initial bytes " + std::to_string(p.initial.n) +
                               " exceed the pool's capacity " + std::to_string(p.capacity.n));
  return p;
}

StreamSpec read_stream(const JsonNode& n) {
  StreamSpec s;
  if (n.raw().is_string()) {  // shorthand: "compute"
    s.name = n.as_string();
    return s;
  }
  s.name = n.get_string("name");
  if (auto r = n.find("reads_from"))
    for (size_t i = 0; i < r->size(); ++i) s.reads_from.push_back(r->at(i).as_string());
  return s;
}

TensorSpec read_tensor(const JsonNode& n) {
  TensorSpec t;
  t.id = static_cast<int>(n.get_int("id"));
  t.name = n.get_string("name", "");
  t.bytes = Bytes(n.get_int_in("bytes", 0, kMaxPlanBytes));
  t.dtype = n.get_string("dtype", "fp32");
  const std::string kind = n.get_string("kind", "other");
  if (!enum_named(kTensorKindNames, 0, kind, &t.kind))
    n.at("kind").fail("unknown tensor kind \"" + kind +
                      "\"; expected param_chunk, grad_chunk, optim_state, activation, buffer or other");
  t.home = n.get_string("home", "");
  return t;
}

ChunkSpec read_chunk(const JsonNode& n) {
  ChunkSpec c;
  c.id = static_cast<int>(n.get_int("id"));
  c.bytes = Bytes(n.get_nonneg_int("bytes"));
  c.dtype = n.get_string("dtype", "fp16");
  if (n.has("resident")) c.resident = n.get_bool("resident", false);
  c.optimizer = n.get_string("optimizer", "");
  if (!c.optimizer.empty() && c.optimizer != "device" && c.optimizer != "host")
    n.at("optimizer").fail("expected \"device\" or \"host\", got \"" + c.optimizer + "\"");
  if (auto ps = n.find("params")) {
    for (size_t i = 0; i < ps->size(); ++i) {
      JsonNode p = ps->at(i);
      ChunkParam cp;
      cp.name = p.get_string("name");
      cp.offset = p.get_nonneg_int("offset");
      if (auto sh = p.find("shape"))
        for (size_t k = 0; k < sh->size(); ++k) cp.shape.push_back(sh->at(k).as_int());
      c.params.push_back(std::move(cp));
    }
  }
  return c;
}

// A kernel set: an array of {kind, shape, dtype, count, flops, bytes} (traces/op_signature.h).
KernelSet read_kernel_set(const JsonNode& n) {
  KernelSet out(n.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const JsonNode k = n.at(i);
    Kernel& kn = out[i];
    kn.sig.kind = k.get_string("kind");
    if (auto sh = k.find("shape"))
      for (size_t d = 0; d < sh->size(); ++d) {
        kn.sig.shape.push_back(sh->at(d).as_int());
        if (kn.sig.shape.back() < 0) sh->at(d).fail("expected an integer >= 0");
      }
    kn.sig.dtype = k.get_string("dtype", "fp32");
    if (dtype_bytes(kn.sig.dtype) == 0) k.at("dtype").fail("expected one of fp32, fp16, bf16, fp64, int64, int32, int8");
    kn.count = k.get_nonneg_int("count", 1);
    kn.flops = k.has("flops") ? k.get_nonneg_number("flops") : 0;
    kn.bytes = k.has("bytes") ? k.get_nonneg_number("bytes") : 0;
  }
  return out;
}

// A collective's group {ranks, ranks_per_node, groups_per_node, scope}, each optional.
CollectiveGroup read_group(const JsonNode& g) {
  auto count = [&](const char* key, int64_t hi) { return g.has(key) ? static_cast<int>(g.get_int_in(key, 0, hi)) : 0; };
  const std::string scope = g.get_string("scope", "intra_node");
  if (scope != "intra_node" && scope != "inter_node") g.at("scope").fail("expected \"intra_node\" or \"inter_node\", got \"" + scope + "\"");
  return {count("ranks", INT_MAX), count("ranks_per_node", INT_MAX),
          static_cast<int16_t>(count("groups_per_node", INT16_MAX)), scope == "inter_node"};
}

// A sub-kind named at `n` that must fit the op's kind.
OpSubKind read_sub_kind(const JsonNode& n, OpKind kind) {
  const std::string s = n.as_string();
  OpSubKind sub;
  if (!enum_named(kSubKinds, 1, s, &sub) || !sub_kind_fits(kind, sub))
    n.fail("\"" + s + "\" is not a sub-kind of " + to_string(kind) + "; expected one of " + sub_kinds_text(kind));
  return sub;
}

HostWork read_host_work(const JsonNode& n) {
  n.check_keys({"hooks", "eager_ops", "copies", "sync"});
  auto count = [&](const char* key) {
    return static_cast<uint16_t>(n.has(key) ? n.get_int_in(key, 0, HostWork::kMax) : 0);
  };
  return {count("hooks"), count("eager_ops"), count("copies")};
}

// attrs only describe an op: a key that names what the simulator or the runtime reads (where plan
// versions 1-3 kept it) is refused, not silently ignored.
void check_attrs(const JsonNode& a, OpKind kind) {
  if (a.has("dtype")) a.at("dtype").fail("an op's work is priced in the plan's dtype (meta.dtype); attrs.dtype is not read");
  if ((is_copy(kind) || kind == OpKind::kHostPass) && a.has("what"))
    a.at("what").fail("a version-4 op says what it moves as \"sub_kind\"");
  for (const char* key : {"kernels", "pinned", "ranks", "ranks_per_node", "groups_per_node", "scope", "impl",
                          "host", "host_sync", "launches", "bytes_per_param"})
    if (a.has(key)) a.at(key).fail("a version-4 op says it as a typed field, not in attrs");
}

// An op of `plan` (its chunks and kernel sets read).
Op read_op(const JsonNode& n, const Plan& plan) {
  const size_t chunks = plan.chunks.size();
  Op op;
  op.id = static_cast<int>(n.get_int("id"));
  const std::string kind = n.get_string("kind");
  if (!enum_named(kOpKinds, 0, kind, &op.kind))
    n.at("kind").fail("unknown op kind \"" + kind + "\"; expected one of " + op_kinds_text());
  op.stream = n.get_string("stream");
  op.block = static_cast<int>(n.get_int("block", -1));
  const int64_t chunk = n.get_int("chunk", -1);
  if (chunk != -1 && (chunk < 0 || chunk >= static_cast<int64_t>(chunks)))
    n.at("chunk").fail("chunk " + std::to_string(chunk) + " does not exist: " +
                       (chunks == 0 ? std::string("the plan has no chunks")
                                    : "expected -1 (none) or a chunk id from 0 to " + std::to_string(chunks - 1)));
  op.chunk = static_cast<int>(chunk);
  op.priority = static_cast<int>(n.get_int("priority", 0));
  if (auto r = n.find("reads")) op.reads = read_int_list(*r);
  if (auto w = n.find("writes")) op.writes = read_int_list(*w);
  if (auto d = n.find("deps")) op.deps = read_int_list(*d);
  if (auto w = n.find("work")) {
    op.work.flops = w->get_nonneg_number("flops");
    op.work.bytes = w->get_nonneg_int("bytes", 0);
    op.work.params = w->get_nonneg_int("params", 0);
  }
  if (auto m = n.find("mem")) {
    for (size_t i = 0; i < m->size(); ++i) {
      JsonNode e = m->at(i);
      MemEffect me;
      me.pool = e.get_string("pool");
      me.delta_bytes = e.get_int_in("delta_bytes", -kMaxPlanBytes, kMaxPlanBytes);
      const std::string at = e.get_string("at", "start");
      if (at == "start") me.at = MemAt::kStart;
      else if (at == "end") me.at = MemAt::kEnd;
      else e.at("at").fail("expected \"start\" or \"end\", got \"" + at + "\"");
      me.tensor = static_cast<int>(e.get_int("tensor", -1));
      op.mem.push_back(me);
    }
  }
  if (auto a = n.find("attrs")) {
    op.attrs = a->raw();
    if (a->is_object()) check_attrs(*a, op.kind);
  }
  if (n.has("pinned")) op.pinned = n.get_bool("pinned", true);
  if (auto g = n.find("group")) op.group = read_group(*g);
  if (auto s = n.find("sub_kind")) op.sub_kind = read_sub_kind(*s, op.kind);
  if (auto h = n.find("host")) {
    op.host = read_host_work(*h);
    op.host_sync = h->get_bool("sync", false);
  }
  op.host_sync = n.get_bool("host_sync", false) || op.host_sync;
  if (n.has("launches")) op.launches = static_cast<uint16_t>(n.get_int_in("launches", 0, HostWork::kMax));
  if (n.has("bytes_per_param")) op.bytes_per_param = n.get_nonneg_number("bytes_per_param");
  if (n.has("kernels"))
    op.kernels = static_cast<int>(n.get_int_in("kernels", 0, static_cast<int64_t>(plan.kernel_sets.size()) - 1));
  return op;
}

// Max-prefix-sum segment tree: query(lo, hi) = max over k in [lo, hi] of prefix[k].
class RangeMax {
 public:
  explicit RangeMax(const std::vector<int64_t>& v) : n_(v.size()), t_(2 * v.size()) {
    for (size_t i = 0; i < n_; ++i) t_[n_ + i] = v[i];
    for (size_t i = n_; i-- > 1;) t_[i] = std::max(t_[2 * i], t_[2 * i + 1]);
  }
  int64_t query(size_t lo, size_t hi) const {  // inclusive
    int64_t best = INT64_MIN;
    for (size_t l = lo + n_, r = hi + n_ + 1; l < r; l /= 2, r /= 2) {
      if (l & 1) best = std::max(best, t_[l++]);
      if (r & 1) best = std::max(best, t_[--r]);
    }
    return best;
  }

 private:
  size_t n_;
  std::vector<int64_t> t_;
};

// A bound on each pool's bytes that holds for every schedule the dependencies and the in-order
// streams allow, so that what the simulator or the runtime measures can never exceed it
// (validate()'s capacity check); `stream_of` maps each op to its stream index.
// Each stream is a sequence of events (op start, op end). At the moment op i starts (or ends),
// every stream s has completed some prefix of its events: at least up to the end of i's last
// ancestor on s, at most up to just before the start of i's first descendant on s. Taking, for
// every other stream independently, the largest prefix sum in that window bounds the pool's bytes.
// O((ops + deps) * streams + ops * streams * log ops).
std::vector<PoolHighWater> memory_high_water(const Plan& plan, const std::vector<int>& stream_of) {
  constexpr size_t kPivotMaxOps = 100000, kPivotMaxWindow = 64;
  const size_t n = plan.ops.size(), S = plan.streams.size(), P = plan.pools.size();
  std::vector<PoolHighWater> out(P);
  for (size_t p = 0; p < P; ++p) out[p] = {plan.pools[p].name, plan.pools[p].capacity, plan.pools[p].initial, -1};
  if (n == 0) return out;
  std::vector<int> pos(n);
  std::vector<std::vector<int>> ops_of(S);
  for (size_t i = 0; i < n; ++i) {
    const size_t s = static_cast<size_t>(stream_of[i]);
    pos[i] = static_cast<int>(ops_of[s].size());
    ops_of[s].push_back(static_cast<int>(i));
  }
  // last_anc[i*S + s]: position on s of i's last ancestor there (-1: none), ids in topological order.
  std::vector<int> last_anc(n * S, -1), first_desc(n * S);
  for (size_t i = 0; i < n; ++i) {
    int* mine = &last_anc[i * S];
    auto take = [&](size_t d) {
      const int* theirs = &last_anc[d * S];
      for (size_t s = 0; s < S; ++s) mine[s] = std::max(mine[s], theirs[s]);
      mine[stream_of[d]] = std::max(mine[stream_of[d]], pos[d]);
    };
    for (int d : plan.ops[i].deps) take(static_cast<size_t>(d));
    if (pos[i] > 0) take(static_cast<size_t>(ops_of[static_cast<size_t>(stream_of[i])][static_cast<size_t>(pos[i] - 1)]));
  }
  // first_desc: children of each op (deps reversed, plus the next op on the stream).
  std::vector<std::vector<int>> children(n);
  for (size_t i = 0; i < n; ++i)
    for (int d : plan.ops[i].deps) children[static_cast<size_t>(d)].push_back(static_cast<int>(i));
  for (size_t i = n; i-- > 0;) {
    int* mine = &first_desc[i * S];
    for (size_t s = 0; s < S; ++s) mine[s] = static_cast<int>(ops_of[s].size());
    auto take = [&](size_t c) {
      const int* theirs = &first_desc[c * S];
      for (size_t s = 0; s < S; ++s) mine[s] = std::min(mine[s], theirs[s]);
      mine[stream_of[c]] = std::min(mine[stream_of[c]], pos[c]);
    };
    for (int c : children[i]) take(static_cast<size_t>(c));
    const auto& own = ops_of[static_cast<size_t>(stream_of[i])];
    if (static_cast<size_t>(pos[i]) + 1 < own.size()) take(static_cast<size_t>(own[static_cast<size_t>(pos[i]) + 1]));
  }
  for (size_t p = 0; p < P; ++p) {
    // prefix[s][k]: the pool's change after the first k events of stream s (k = 0 .. 2 len).
    std::vector<std::vector<int64_t>> prefix(S);
    std::vector<bool> touches(S, false);
    for (size_t s = 0; s < S; ++s) {
      auto& pre = prefix[s];
      pre.assign(2 * ops_of[s].size() + 1, 0);
      for (size_t k = 0; k < ops_of[s].size(); ++k) {
        int64_t at_start = 0, at_end = 0;
        for (const auto& m : plan.ops[static_cast<size_t>(ops_of[s][k])].mem) {
          if (m.pool != plan.pools[p].name) continue;
          (m.at == MemAt::kStart ? at_start : at_end) += m.delta_bytes;
          touches[s] = true;
        }
        pre[2 * k + 1] = pre[2 * k] + at_start;
        pre[2 * k + 2] = pre[2 * k + 1] + at_end;
      }
    }
    std::vector<std::unique_ptr<RangeMax>> rmq(S);
    for (size_t s = 0; s < S; ++s)
      if (touches[s]) rmq[s] = std::make_unique<RangeMax>(prefix[s]);
    const int64_t initial = plan.pools[p].initial.n;
    std::vector<size_t> lo(S), hi(S);
    for (size_t i = 0; i < n; ++i) {
      const size_t own = static_cast<size_t>(stream_of[i]);
      if (!touches[own] && out[p].op_at_high_water >= 0) continue;  // cannot raise the bound
      int64_t others = 0;
      for (size_t s = 0; s < S; ++s) {
        if (s == own || !touches[s]) continue;
        lo[s] = static_cast<size_t>(2 * (last_anc[i * S + s] + 1));
        hi[s] = static_cast<size_t>(2 * first_desc[i * S + s]);
        others += rmq[s]->query(lo[s], hi[s]);
      }
      const auto& pre = prefix[own];
      const int64_t mine_start = pre[2 * static_cast<size_t>(pos[i]) + 1];
      const int64_t mine_end = pre[2 * static_cast<size_t>(pos[i]) + 2];
      int64_t bound = std::max(mine_start, mine_end) + others;
      // Tighten: streams are not independent. If a pivot stream has started op q, every ancestor
      // of q has ended, which raises the other streams' windows (e.g. a backward fetch on h2d
      // implies that the d2h release it waits for is done). Each pivot gives a sound bound;
      // keep the smallest. Only for plans of policy size, where windows are short, and where the
      // bound could still raise the high water (tightening only lowers it).
      const bool may_raise = out[p].op_at_high_water < 0 || bound + initial > out[p].high_water.n;
      if (n <= kPivotMaxOps && may_raise) {
        for (size_t piv = 0; piv < S; ++piv) {
          if (piv == own || !touches[piv] || hi[piv] - lo[piv] > kPivotMaxWindow) continue;
          int64_t best_start = INT64_MIN, best_end = INT64_MIN;
          for (size_t k = lo[piv]; k <= hi[piv]; ++k) {
            int64_t total = prefix[piv][k];
            bool start_ok = true, end_ok = true, feasible = true;
            const int q = k > 0 ? ops_of[piv][(k - 1) / 2] : -1;
            for (size_t s2 = 0; s2 < S && feasible; ++s2) {
              if (s2 == piv) continue;
              const int anc = q >= 0 ? last_anc[static_cast<size_t>(q) * S + s2] : -1;
              if (s2 == own) {
                start_ok = anc < pos[i];
                end_ok = anc <= pos[i];
                continue;
              }
              if (!touches[s2]) continue;
              const size_t need = std::max(lo[s2], static_cast<size_t>(2 * (anc + 1)));
              if (need > hi[s2]) feasible = false;
              else total += rmq[s2]->query(need, hi[s2]);
            }
            if (!feasible) continue;
            if (start_ok) best_start = std::max(best_start, total);
            if (end_ok) best_end = std::max(best_end, total);
          }
          int64_t pivot_bound = INT64_MIN;
          if (best_start != INT64_MIN) pivot_bound = std::max(pivot_bound, mine_start + best_start);
          if (best_end != INT64_MIN) pivot_bound = std::max(pivot_bound, mine_end + best_end);
          if (pivot_bound != INT64_MIN) bound = std::min(bound, pivot_bound);
        }
      }
      bound += initial;
      if (out[p].op_at_high_water < 0 || bound > out[p].high_water.n) {
        out[p].high_water = Bytes(bound);
        out[p].op_at_high_water = static_cast<int>(i);
      }
    }
  }
  return out;
}

}  // namespace

int Plan::stream_index(const std::string& name) const {
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].name == name) return static_cast<int>(i);
  return -1;
}

int Plan::add_kernel_set(KernelSet ks) {
  for (size_t i = 0; i < kernel_sets.size(); ++i)
    if (kernel_sets[i] == ks) return static_cast<int>(i);
  kernel_sets.push_back(std::move(ks));
  return static_cast<int>(kernel_sets.size()) - 1;
}

const KernelSet& Plan::kernels_of(const Op& op) const {
  static const KernelSet kNone;
  return op.kernels >= 0 ? kernel_sets[static_cast<size_t>(op.kernels)] : kNone;
}

int Plan::pool_index(const std::string& name) const {
  for (size_t i = 0; i < pools.size(); ++i)
    if (pools[i].name == name) return static_cast<int>(i);
  return -1;
}

const char* to_string(TensorKind k) { return kTensorKindNames[static_cast<int>(k)]; }

const char* to_string(OpKind k) { return kOpKinds[static_cast<size_t>(k)]; }

OpKind op_kind_named(const std::string& name) {
  OpKind k{};
  PROTWIN_CHECK(enum_named(kOpKinds, 0, name, &k), "unknown op kind \"", name, "\"; expected one of ", op_kinds_text());
  return k;
}

std::ostream& operator<<(std::ostream& os, OpKind k) { return os << to_string(k); }

const char* to_string(OpSubKind k) { return kSubKinds[static_cast<size_t>(k)]; }

bool sub_kind_fits(OpKind kind, OpSubKind sub) {
  using S = OpSubKind;
  switch (sub) {
    case S::kNone: return true;
    case S::kParamChunk: case S::kUpdatedParams: case S::kGradRoundtrip: return kind == OpKind::kH2D;
    case S::kActivation: return is_copy(kind);
    case S::kGradChunk: case S::kPartialGradChunk: case S::kGradFp32: return kind == OpKind::kD2H;
    case S::kOverflowScan: case S::kUnscale: case S::kFp16Copy: return kind == OpKind::kHostPass;
    case S::kTorch: return kind == OpKind::kAdamCpu;
  }
  return false;
}

std::string sub_kinds_text(OpKind kind) {
  std::string out;
  for (size_t i = 1; i < std::size(kSubKinds); ++i)
    if (sub_kind_fits(kind, static_cast<OpSubKind>(i))) out += (out.empty() ? "" : ", ") + std::string(kSubKinds[i]);
  return out.empty() ? "none (the kind has no sub-kinds)" : out;
}

int Plan::ranks_per_host(int gpus_per_node) const {
  const int per_node = ranks() / std::max(1, nodes);
  return std::min(std::max(1, per_node), gpus_per_node);
}

nlohmann::json plan_meta_json(const Plan& plan) {
  nlohmann::json meta = plan.meta.is_object() ? plan.meta : nlohmann::json::object();
  if (plan.gpus > 0) meta["gpus"] = plan.gpus;
  if (plan.nodes > 0) meta["nodes"] = plan.nodes;
  if (!plan.dtype.empty()) meta["dtype"] = plan.dtype;
  return meta;
}

std::string describe_op(const Op& op) {
  return "plan op " + std::to_string(op.id) + " (" + to_string(op.kind) + ", stream " + op.stream + ")";
}

std::string describe_op(const Plan& plan, const Op& op) {
  if (plan.source.empty()) return describe_op(op);
  return plan.source + ":/ops/" + std::to_string(op.id) + " (" + to_string(op.kind) + ", stream " + op.stream + ")";
}

Plan plan_from_json(const nlohmann::json& j, const std::string& source) {
  // JsonNode needs a stable document; wrap without copying the caller's json.
  auto file = std::make_shared<const std::string>(source);
  JsonNode root(&j, file, "");
  if (!j.is_object()) root.fail("expected a protwin.plan object");
  root.check_format(kPlanFormat, kPlanVersion, "plan",
                    std::string("\nhint: recompile the plan with this protwin: ") + kPlanRecompile);
  Plan plan;
  if (auto meta = root.find("meta")) {
    if (!meta->is_object()) meta->fail("expected an object");
    plan.meta = meta->raw();
    if (auto pools = meta->find("pools"))
      for (size_t i = 0; i < pools->size(); ++i) plan.pools.push_back(read_pool(pools->at(i)));
    // The typed fields (meta.nodes 0 and a plan without meta.gpus were read as one rank before).
    if (meta->has("gpus")) plan.gpus = static_cast<int>(meta->get_int_in("gpus", 0, 1 << 30));
    if (meta->has("nodes")) plan.nodes = static_cast<int>(meta->get_int_in("nodes", 0, 1 << 30));
    plan.dtype = meta->get_string("dtype", "");
    for (const char* key : {"pools", "gpus", "nodes", "dtype"}) plan.meta.erase(key);
  }
  JsonNode streams = root.at("streams");
  for (size_t i = 0; i < streams.size(); ++i) plan.streams.push_back(read_stream(streams.at(i)));
  if (auto tensors = root.find("tensors"))
    for (size_t i = 0; i < tensors->size(); ++i) plan.tensors.push_back(read_tensor(tensors->at(i)));
  if (auto chunks = root.find("chunks"))
    for (size_t i = 0; i < chunks->size(); ++i) plan.chunks.push_back(read_chunk(chunks->at(i)));
  if (auto sets = root.find("kernel_sets"))
    for (size_t i = 0; i < sets->size(); ++i)
      plan.kernel_sets.push_back(read_kernel_set(sets->at(i)));
  JsonNode ops = root.at("ops");
  plan.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    JsonNode n = ops.at(i);
    plan.ops.push_back(read_op(n, plan));
    if (plan.ops.back().id != static_cast<int>(i))
      n.at("id").fail("op ids must be dense and in order: expected " + std::to_string(i) +
                      ", got " + std::to_string(plan.ops.back().id));
  }
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].id != static_cast<int>(i))
      root.at("tensors").at(i).at("id").fail("tensor ids must be dense and in order: expected " +
                                             std::to_string(i));
  plan.source = source;
  return plan;
}

Plan read_plan(const std::string& path) {
  JsonDocument doc = JsonDocument::load(path);
  return plan_from_json(doc.json(), path);
}

namespace {

nlohmann::json op_to_json(const Op& op) {
  using nlohmann::json;
  json jo = {{"id", op.id}, {"kind", to_string(op.kind)}, {"stream", op.stream}};
  if (op.sub_kind != OpSubKind::kNone) jo["sub_kind"] = to_string(op.sub_kind);
  if (op.block >= 0) jo["block"] = op.block;
  if (op.chunk >= 0) jo["chunk"] = op.chunk;
  if (op.priority != 0) jo["priority"] = op.priority;
  if (op.kernels >= 0) jo["kernels"] = op.kernels;
  if (op.pinned) jo["pinned"] = *op.pinned;
  const CollectiveGroup& g = op.group;
  if (g.ranks > 0 || g.ranks_per_node > 0 || g.groups_per_node > 0 || g.inter_node) {
    jo["group"] = {{"ranks", g.ranks}, {"scope", g.inter_node ? "inter_node" : "intra_node"}};
    if (g.ranks_per_node > 0) jo["group"]["ranks_per_node"] = g.ranks_per_node;
    if (g.groups_per_node > 0) jo["group"]["groups_per_node"] = g.groups_per_node;
  }
  if (!op.host.empty()) {
    json& h = jo["host"] = json::object();
    if (op.host.hooks > 0) h["hooks"] = op.host.hooks;
    if (op.host.eager_ops > 0) h["eager_ops"] = op.host.eager_ops;
    if (op.host.copies > 0) h["copies"] = op.host.copies;
  }
  if (op.host_sync) jo["host_sync"] = true;
  if (op.launches > 0) jo["launches"] = op.launches;
  if (op.bytes_per_param > 0) jo["bytes_per_param"] = op.bytes_per_param;
  if (!op.reads.empty()) jo["reads"] = op.reads;
  if (!op.writes.empty()) jo["writes"] = op.writes;
  if (!op.deps.empty()) jo["deps"] = op.deps;
  jo["work"] = {{"flops", op.work.flops}, {"bytes", op.work.bytes}, {"params", op.work.params}};
  if (!op.mem.empty()) {
    json mem = json::array();
    for (const auto& m : op.mem) {
      json jm = {{"pool", m.pool}, {"delta_bytes", m.delta_bytes}, {"at", m.at == MemAt::kStart ? "start" : "end"}};
      if (m.tensor >= 0) jm["tensor"] = m.tensor;
      mem.push_back(jm);
    }
    jo["mem"] = mem;
  }
  if (!op.attrs.is_null()) jo["attrs"] = op.attrs;
  return jo;
}

// The plan without its ops ("ops": []).
nlohmann::json plan_frame(const Plan& plan) {
  using nlohmann::json;
  json meta = plan_meta_json(plan);
  json pools = json::array();
  for (const auto& p : plan.pools)
    pools.push_back({{"name", p.name}, {"capacity_bytes", p.capacity.n}, {"initial_bytes", p.initial.n}});
  meta["pools"] = pools;
  json streams = json::array();
  for (const auto& s : plan.streams) {
    json js = {{"name", s.name}};
    if (!s.reads_from.empty()) js["reads_from"] = s.reads_from;
    streams.push_back(js);
  }
  json tensors = json::array();
  for (const auto& t : plan.tensors)
    tensors.push_back({{"id", t.id}, {"name", t.name}, {"bytes", t.bytes.n}, {"dtype", t.dtype},
                       {"kind", to_string(t.kind)}, {"home", t.home}});
  json chunks = json::array();
  for (const auto& c : plan.chunks) {
    json params = json::array();
    for (const auto& p : c.params)
      params.push_back({{"name", p.name}, {"offset", p.offset}, {"shape", p.shape}});
    json jc = {{"id", c.id}, {"bytes", c.bytes.n}, {"dtype", c.dtype}, {"params", params}};
    if (c.resident) jc["resident"] = *c.resident;
    if (!c.optimizer.empty()) jc["optimizer"] = c.optimizer;
    chunks.push_back(std::move(jc));
  }
  json sets = json::array();
  for (const auto& ks : plan.kernel_sets) sets.push_back(kernel_set_to_json(ks));
  return {{"format", kPlanFormat}, {"version", kPlanVersion}, {"meta", meta},       {"streams", streams},
          {"tensors", tensors},    {"chunks", chunks},        {"kernel_sets", sets}, {"ops", json::array()}};
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan) {
  nlohmann::json j = plan_frame(plan);
  for (const auto& op : plan.ops) j["ops"].push_back(op_to_json(op));
  return j;
}

void write_plan(const Plan& plan, const std::string& path) {
  PlanWriter out(path, plan);
  for (const auto& op : plan.ops) out.add(op);
  out.commit();
}

// The frame's text with the ops written one by one where its empty list was (the same bytes as
// plan_to_json(plan).dump(1)).
PlanWriter::PlanWriter(const std::string& path, const Plan& header)
    : out_(std::make_unique<AtomicFileWriter>(path)),
      splice_(std::make_unique<ArraySplicer>(*out_, plan_frame(header), "ops", 1)),
      kernel_sets_(header.kernel_sets.size()) {}

PlanWriter::~PlanWriter() = default;

void PlanWriter::add(const Op& op) {
  PROTWIN_ASSERT(op.kernels < static_cast<int>(kernel_sets_), describe_op(op), ": kernel set ", op.kernels,
                 " was not in the header when the plan's frame was written");
  splice_->add(op_to_json(op));
}

void PlanWriter::commit() {
  splice_->finish();
  out_->commit();
}

void check_op(const Plan& header, const Op& op, int stream) {
  PROTWIN_CHECK(stream >= 0, describe_op(header, op), ": unknown stream \"", op.stream, "\"");
  PROTWIN_CHECK(op.kernels >= -1 && op.kernels < static_cast<int>(header.kernel_sets.size()), describe_op(header, op),
                ": kernel set ", op.kernels, " does not exist (the plan has ", header.kernel_sets.size(), ")");
  PROTWIN_CHECK(op.work.flops >= 0 && op.work.bytes >= 0 && op.work.params >= 0, describe_op(header, op),
                ": negative work (flops ", op.work.flops, ", bytes ", op.work.bytes, ", params ", op.work.params, ")");
  for (int d : op.deps) {
    PROTWIN_CHECK(d >= 0, describe_op(header, op), ": dependency on unknown op ", d);
    PROTWIN_CHECK(d != op.id, describe_op(header, op), ": depends on itself");
  }
  const int n_tensors = static_cast<int>(header.tensors.size());
  for (int t : op.reads) PROTWIN_CHECK(t >= 0 && t < n_tensors, describe_op(header, op), ": reads unknown tensor ", t);
  for (int t : op.writes) PROTWIN_CHECK(t >= 0 && t < n_tensors, describe_op(header, op), ": writes unknown tensor ", t);
  for (const auto& m : op.mem) {
    PROTWIN_CHECK(m.tensor >= -1 && m.tensor < n_tensors, describe_op(header, op),
                  ": memory effect names unknown tensor ", m.tensor);
    PROTWIN_CHECK(m.delta_bytes >= -kMaxPlanBytes && m.delta_bytes <= kMaxPlanBytes, describe_op(header, op),
                  ": memory effect of ", m.delta_bytes, " bytes on pool ", m.pool, " is out of range (at most ",
                  kMaxPlanBytes, " bytes either way)");
  }
}

ValidationResult validate(const Plan& plan) {
  ValidationResult result;
  // Where a plan-level error is: "p.json:/streams/2", or "plan stream 2" for a plan built in memory.
  auto at = [&](const char* array, size_t i, const char* singular) {
    return plan.source.empty() ? "plan " + std::string(singular) + " " + std::to_string(i)
                               : plan.source + ":/" + array + "/" + std::to_string(i);
  };
  const int n_ops = static_cast<int>(plan.ops.size());
  const int n_tensors = static_cast<int>(plan.tensors.size());
  const int n_pools = static_cast<int>(plan.pools.size());

  // Names must be unique, or "stream x" would be ambiguous.
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    PROTWIN_CHECK(plan.stream_index(plan.streams[i].name) == static_cast<int>(i),
                  at("streams", i, "stream"), ": duplicate stream name \"", plan.streams[i].name, "\"");
    for (const auto& p : plan.streams[i].reads_from)
      PROTWIN_CHECK(plan.pool_index(p) >= 0, at("streams", i, "stream"), " (", plan.streams[i].name, ")",
                    ": reads_from names unknown pool \"", p, "\"");
  }
  for (size_t i = 0; i < plan.pools.size(); ++i)
    PROTWIN_CHECK(plan.pool_index(plan.pools[i].name) == static_cast<int>(i), at("meta/pools", i, "pool"),
                  ": duplicate pool name \"", plan.pools[i].name, "\"");
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorSpec& t = plan.tensors[i];
    PROTWIN_CHECK(t.bytes.n >= 0, at("tensors", i, "tensor"), " (", t.name, "): negative bytes ", t.bytes.n);
    PROTWIN_CHECK(t.home.empty() || plan.pool_index(t.home) >= 0, at("tensors", i, "tensor"), " (",
                  t.name, "): unknown home pool \"", t.home, "\"");
  }

  // Graph: explicit deps plus the in-order edge from the previous op on the same stream.
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> g(static_cast<size_t>(n_ops));
  std::vector<int> last_on_stream(plan.streams.size(), -1);
  std::vector<int> stream_of(static_cast<size_t>(n_ops));
  for (const Op& op : plan.ops) {
    PROTWIN_CHECK(op.id >= 0 && op.id < n_ops && &plan.ops[static_cast<size_t>(op.id)] == &op,
                  describe_op(plan, op), ": op ids must be dense and equal to the op's position");
    const int s = plan.stream_index(op.stream);
    check_op(plan, op, s);
    stream_of[static_cast<size_t>(op.id)] = s;
    for (int d : op.deps) {
      PROTWIN_CHECK(d < n_ops, describe_op(plan, op), ": dependency on unknown op ", d);
      boost::add_edge(static_cast<size_t>(d), static_cast<size_t>(op.id), g);
    }
    if (last_on_stream[static_cast<size_t>(s)] >= 0)
      boost::add_edge(static_cast<size_t>(last_on_stream[static_cast<size_t>(s)]),
                      static_cast<size_t>(op.id), g);
    last_on_stream[static_cast<size_t>(s)] = op.id;
    for (const auto& m : op.mem)
      PROTWIN_CHECK(plan.pool_index(m.pool) >= 0, describe_op(plan, op), ": memory effect on unknown pool \"",
                    m.pool, "\"");
  }

  std::vector<size_t> reverse_topo;
  try {
    boost::topological_sort(g, std::back_inserter(reverse_topo));
  } catch (const boost::not_a_dag&) {
    // Find one op on a cycle to name: an op whose deps include a later-or-equal op is the usual
    // cause; report the first such op with the chain it closes.
    for (const Op& op : plan.ops)
      for (int d : op.deps)
        if (d > op.id)
          PROTWIN_CHECK(false, describe_op(plan, op), ": dependency cycle through op ", d,
                        " (ops may only depend on earlier ops)");
    PROTWIN_CHECK(false, plan.source.empty() ? "plan" : plan.source, ": dependency cycle (deps together with in-order streams)");
  }
  // Ids must also be topologically ordered (DESIGN §3), so id order is a valid execution order.
  for (const Op& op : plan.ops)
    for (int d : op.deps)
      PROTWIN_CHECK(d < op.id, describe_op(plan, op), ": depends on later op ", d,
                    " (op ids must be topologically ordered)");

  // Residency and pools below zero: walk the ops in id order (a valid execution order).
  std::vector<int64_t> used(static_cast<size_t>(n_pools));
  for (int p = 0; p < n_pools; ++p) used[static_cast<size_t>(p)] = plan.pools[static_cast<size_t>(p)].initial.n;
  // resident[t] = bitmask of pools holding tensor t (plans use a handful of pools).
  PROTWIN_CHECK(n_pools <= 64, "plan: at most 64 memory pools are supported, got ", n_pools);
  std::vector<uint64_t> resident(static_cast<size_t>(n_tensors), 0);
  for (const auto& t : plan.tensors)
    if (!t.home.empty()) resident[static_cast<size_t>(t.id)] |= uint64_t{1} << plan.pool_index(t.home);
  // Every effect within kMaxPlanBytes and each pool's effects summing (in absolute value) to at most
  // 2^60: then no running total below, nor any prefix sum of memory_high_water, overflows.
  std::vector<int64_t> churn(static_cast<size_t>(n_pools), 0);
  auto apply = [&](const Op& op, MemAt at) {
    for (const auto& m : op.mem) {
      if (m.at != at) continue;
      const int p = plan.pool_index(m.pool);
      int64_t& c = churn[static_cast<size_t>(p)];
      c += m.delta_bytes < 0 ? -m.delta_bytes : m.delta_bytes;
      PROTWIN_CHECK(c <= (int64_t{1} << 60), describe_op(plan, op), ": the memory effects on pool ", m.pool,
                    " add up to more than 2^60 bytes");
      int64_t& u = used[static_cast<size_t>(p)];
      u += m.delta_bytes;
      PROTWIN_CHECK(u >= 0, describe_op(plan, op), ": pool ", m.pool, " below zero (", u,
                    " bytes after a change of ", m.delta_bytes, ")");
      if (m.tensor >= 0) {
        const uint64_t bit = uint64_t{1} << p;
        if (m.delta_bytes > 0) resident[static_cast<size_t>(m.tensor)] |= bit;
        else if (m.delta_bytes < 0) resident[static_cast<size_t>(m.tensor)] &= ~bit;
      }
    }
  };
  for (const Op& op : plan.ops) {
    apply(op, MemAt::kStart);
    const StreamSpec& stream = plan.streams[static_cast<size_t>(stream_of[static_cast<size_t>(op.id)])];
    for (int t : op.reads) {
      const uint64_t where = resident[static_cast<size_t>(t)];
      uint64_t allowed = 0;
      for (const auto& p : stream.reads_from) allowed |= uint64_t{1} << plan.pool_index(p);
      if (stream.reads_from.empty()) allowed = ~uint64_t{0};
      if (!(where & allowed)) {
        std::string pools;
        for (const auto& p : stream.reads_from) pools += (pools.empty() ? "" : " or ") + p;
        const TensorSpec& ts = plan.tensors[static_cast<size_t>(t)];
        PROTWIN_CHECK(false, describe_op(plan, op), ": reads tensor ", t, " (", ts.name,
                      ") which is not resident in ", pools.empty() ? "any pool" : pools);
      }
    }
    apply(op, MemAt::kEnd);
  }

  result.pools = memory_high_water(plan, stream_of);
  for (const auto& hw : result.pools)
    PROTWIN_CHECK(hw.high_water <= hw.capacity, describe_op(plan, plan.ops[static_cast<size_t>(hw.op_at_high_water)]),
                  ": pool ", hw.name, " over capacity: ", hw.high_water.n, " bytes needed, capacity ",
                  hw.capacity.n,
                  "\nhint: the plan does not fit this machine; offload more or shrink the batch");
  return result;
}

}  // namespace protwin::traces
