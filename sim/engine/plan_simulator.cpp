#include "sim/engine/plan_simulator.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/huge_pages.h"
#include "sim/engine/link.h"
#include "sim/engine/pool.h"
#include "sim/engine/resource.h"
#include "traces/error.h"
#include "traces/thread_cpu_time.h"

namespace protwin::sim {

namespace {

// Event priorities at equal time: ends first, then transfer starts, then op starts.
constexpr int64_t kPrioEnd = 0;
constexpr int64_t kPrioTransfer = 1;
constexpr int64_t kPrioDispatch = 2;

// Payload = version << 40 | kind << 32 | op index. kPaced: the end of a contended stream phase,
// whose version tells its current end from the ends it had before its pace changed (Contended).
enum EventKind : uint64_t {
  kDispatch = 0, kGranted = 1, kFixedDone = 2, kEnd = 3, kTransferDone = 4, kLaunched = 5, kPaced = 6
};
constexpr uint64_t payload(EventKind kind, size_t op, uint32_t version = 0) {
  return (uint64_t{version & 0xffffffu} << 40) | (uint64_t{kind} << 32) | op;
}

// Memory effects are packed as delta * kMaxPools + pool in one int64.
constexpr int64_t kMaxPools = 64;  // = 1 << 6 (apply_mem shifts by 6)
constexpr int64_t kMaxDelta = int64_t{1} << 56;

constexpr uint32_t kNone = 0xffffffffu;

// One op while the run holds it, in its slot: what the event loop reads (one cache line: its
// cost, stream, id, its successors as a linked list of edges, its memory effects
// [mem_begin, mem_split) at start and [mem_split, mem_end) at its end, its times) ...
struct alignas(64) OpState {
  int64_t fixed = 0;         // ns
  double link_bytes = 0;     // bytes over `route` after the fixed part
  int64_t start = -1, end = -1;
  int32_t route = -1;        // index into Run::routes_; -1 = no transfer
  int32_t stream = 0;
  int32_t priority = 0;
  uint32_t succ_head = kNone;
  uint32_t mem_begin = 0, mem_split = 0, mem_end = 0;
  uint32_t id = 0;
};
static_assert(sizeof(OpState) <= 64, "one cache line per op");

// ... apart: the op itself (a plan's run; a streamed run keeps its id, kind and stream instead: the
// source frees the op once it is taken), its last successor edge, and, only once some op has host
// work (arrays of a plan without it stay small), its host dispatch.
struct HostState {
  int32_t host = -1;         // host index (-1: not issued by a host)
  int64_t host_ns = 0;
  int64_t launch_start = -1, launch_end = -1;
  int32_t wakes = 0;         // host_sync op: its host index + 1 while the host waits for it
  uint8_t host_flags = 0;    // kSync | kCpuWork | kCpuDep
};

struct Edge {
  uint32_t to;
  uint32_t next;
};

struct Route {
  std::array<int, hw::Phase::kMaxLinks> links;
  int n_links;
  double max_GBps;
};

// One rank's host thread (DESIGN §4, host dispatch): it issues its ops in op-id order, each for
// its host time; it waits while launch_queue_depth launches are unfinished, after a host_sync op
// until that op ends, and before an op that depends on CPU work until that work ends.
struct Host {
  std::string name;              // "host", or "stage0.host" for streams "stage0.*"
  std::deque<uint32_t> ops;      // the slots of the ops it has yet to issue, in id order
  int64_t n_ops = 0;             // all ops it issues
  int64_t last_id = -1;          // the last op given to it
  bool drained = false;          // the source has no more of its ops
  int64_t pending = 0;           // issued, not finished
  bool busy = false;             // launching, or blocked until a host_sync op ends
  int64_t busy_ns = 0;
};

// Plans have a handful of streams and pools: a linear scan beats hashing.
int find_name(const std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.size() == name.size() && (n.empty() || n[0] == name[0]) && n == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

enum HostFlag : uint8_t { kSync = 1, kCpuWork = 2, kCpuDep = 4 };

// A stream slowed by contention rules or shared cores (contention.h): the op in its stream phase,
// the work it has left (ns at full pace), since when, at what slowdown, and the version of its
// scheduled end.
struct Contended {
  std::vector<int> rules;  // the rules that slow this stream
  double threads = 0;      // its running op's threads on the shared cores (slowed)
  double load = 0;         // ... (not slowed)
  bool waiting = false;    // waiting in a rendezvous (its kArrive op ended, its next op not started)
  int64_t op = -1;         // slot of the op in its stream phase; -1: none
  double work = 0;
  int64_t since = 0;
  double slowdown = 1;
  uint32_t version = 0;  // of its scheduled end (Run::next_version)
};

// The slots of the ops a streamed run holds, by id: a table of pages of 1,024 ids each, a page
// there while it holds an op. The held ids come in runs (a task's ops are numbered together), so
// a few pages hold them all; the page list itself is 8 bytes per 1,024 ids of the plan.
class SlotsById {
 public:
  uint32_t find(uint32_t id) const {
    const size_t pg = id >> kPageBits;
    return pg < pages_.size() && pages_[pg] ? pages_[pg]->slot[id & kPageMask] : kNone;
  }
  // False if `id` is there already.
  bool insert(uint32_t id, uint32_t slot) {
    const size_t pg = id >> kPageBits;
    if (pg >= pages_.size()) pages_.resize(pg + 1);
    if (!pages_[pg]) {
      pages_[pg] = std::make_unique<Page>();
      pages_[pg]->slot.fill(kNone);
    }
    uint32_t& cell = pages_[pg]->slot[id & kPageMask];
    if (cell != kNone) return false;
    cell = slot;
    ++pages_[pg]->held;
    return true;
  }
  void erase(uint32_t id) {
    const size_t pg = id >> kPageBits;
    Page& page = *pages_[pg];
    page.slot[id & kPageMask] = kNone;
    if (--page.held == 0) pages_[pg].reset();
  }

 private:
  static constexpr int kPageBits = 10;
  static constexpr uint32_t kPageMask = (1u << kPageBits) - 1;
  struct Page {
    std::array<uint32_t, size_t{1} << kPageBits> slot;
    int held = 0;
  };
  std::vector<std::unique_ptr<Page>> pages_;
};

// One simulation of one plan: all mutable state lives here.
class Run final : public Handler {
 public:
  // streamed: the source generates ops during the loop (it is told when ops start; each op's slot
  // is freed when it ends); otherwise every op is taken before the loop, op i in slot i.
  // any_order: records go to the sink as ops end, not in id order.
  Run(OpSource& source, const hw::CostModel& cost, const std::vector<ContentionRule>& rules, const SharedCores& cores,
      bool streamed, OpRecordSink sink, bool any_order)
      : source_(source), header_(source.header()), cost_model_(cost), streamed_(streamed), any_order_(any_order),
        sink_(std::move(sink)), rules_(rules), cores_(cores) {}
  RunStats stats() const { return {engine_.events_run(), loop_cpu_s_, gen_, peak_live_, peak_live_rank_, peak_held_}; }

  traces::Report simulate();
  void on_event(uint64_t p) override;

 private:
  // Everything below indexes ops by slot (= id for a plan's run).
  OpState& at(size_t i) { return state_[i]; }
  HostState& host_state(size_t i) { return host_states_[i]; }
  // The op (in a streamed run a copy of its id, kind and stream: the source may have freed it).
  traces::Op op(size_t i) {
    if (!streamed_) return *op_of_[i];
    traces::Op o;
    o.id = static_cast<int>(at(i).id);
    o.kind = kind_of_[i];
    o.stream = stream_names_[static_cast<size_t>(at(i).stream)];
    return o;
  }
  // Unfinished dependencies of op i (+1 until launched, with host dispatch): apart, as successors'
  // counts are what an op's end touches.
  int32_t& waiting(size_t i) { return waiting_[i]; }
  // Whether the op with id `id` (generated) has ended.
  bool ended(uint32_t id) {
    if (!streamed_) return at(id).end >= 0;
    const uint32_t slot = slot_of_.find(id);
    return slot == kNone || at(slot).end >= 0;
  }
  // Plans have a handful of streams (a linear scan); 4D plans one set per stage (a hash map).
  int find_stream(const std::string& name) const {
    if (stream_index_.empty()) return find_name(stream_names_, name);
    auto it = stream_index_.find(name);
    return it == stream_index_.end() ? -1 : it->second;
  }
  void init();
  bool pull();
  void add_op(const traces::Op& op);
  uint32_t take_slot(uint32_t id);
  void free_slot(size_t i);
  void link(uint32_t from, uint32_t to);
  void link_edge(uint32_t from, uint32_t to);
  void resize_slots(size_t n);
  void take_cost(size_t i, const traces::Op& op);
  int32_t route_id(const hw::Phase& transfer, const traces::Op& op);
  // Flattened: the push inline at every op's end (GCC otherwise calls an outlined copy of it).
  [[gnu::flatten]] void make_ready(size_t i) { ready_.push_back(static_cast<uint32_t>(i)); }
  void dispatch();
  void flush_ready();
  void begin(size_t i);
  // Out of line: the uncontended path of begin() and finish() stays small (no register spills).
  [[gnu::noinline]] void begin_contended(size_t i);
  inline void schedule_fixed(size_t i, int64_t ns, uint32_t version);
  [[noreturn]] void fail_horizon(size_t i, double ns, const char* pace);
  void paced_end(size_t i, uint64_t version);
  [[gnu::noinline]] void running(size_t i, int delta);
  void runnable(double delta);
  uint32_t next_version(Contended& c);
  int64_t paced_ns(size_t i, const Contended& c);
  void repace(size_t s);
  double slowdown(size_t s) const;
  void after_fixed(size_t i);
  void finish(size_t i);
  void put_record(size_t i);
  void deliver(traces::OpRecord&& r);
  traces::OpRecord record(size_t i);
  void apply_mem(size_t i, bool at_end);
  void try_launch(size_t h);
  void launched(size_t i);
  traces::Report report();  // moves the pool curves out

  OpSource& source_;
  const traces::Plan& header_;
  const hw::CostModel& cost_model_;
  const bool streamed_, any_order_;
  const OpRecordSink sink_;
  bool exhausted_ = false;
  bool loop_started_ = false;

  // The ops held, one per slot (nothing allocated per op while simulating, apart from the
  // pool's growth). Streamed: slots of ended ops are reused; slot_of_ finds an op by id.
  std::vector<OpState> state_;
  std::vector<const traces::Op*> op_of_;  // a plan's run
  std::vector<uint32_t> succ_tail_;
  std::vector<HostState> host_states_;    // empty while no op has host work
  std::vector<int32_t> waiting_;
  std::vector<traces::OpKind> kind_of_;  // streamed: the ops' kinds
  std::vector<uint32_t> free_slots_;
  SlotsById slot_of_;
  // Streamed: ops waiting for an op not generated yet (its id -> their slots).
  std::unordered_map<uint32_t, std::vector<uint32_t>> awaited_;
  // Streamed, records in id order: the next id to go out, the records of ops ended before it.
  uint32_t next_out_ = 0;
  std::unordered_map<uint32_t, traces::OpRecord> held_;
  uint64_t gen_ = 0, live_ = 0, peak_live_ = 0, peak_held_ = 0;
  // Streamed: each stream's rank (its host thread's name, whether or not it issues) and the ops
  // each rank holds.
  std::vector<uint32_t> rank_of_stream_;
  std::vector<uint64_t> live_per_rank_;
  uint64_t peak_live_rank_ = 0;
  std::vector<Edge> edges_;
  uint32_t free_edge_ = kNone;
  std::vector<std::pair<uint32_t, uint32_t>> forward_deps_;  // (dep, op) with dep > op: linked once all are taken
  std::vector<int64_t> mem_;  // delta_bytes * kMaxPools + pool
  std::vector<size_t> changes_per_pool_;
  std::vector<std::string> stream_names_, pool_names_;
  std::unordered_map<std::string, int> stream_index_;  // with more than kScanStreams streams
  std::vector<int32_t> last_on_stream_, host_of_stream_;  // slot of the stream's last op held (-1: none)
  std::vector<int64_t> last_id_on_stream_;
  int last_stream_ = -1;
  std::vector<Route> routes_;  // distinct (links, cap) of the plan's transfers
  std::unordered_map<uint32_t, std::vector<uint32_t>> cpu_deps_;  // op's slot -> its CPU-work deps' ids
  bool has_hosts_ = false;     // some op has a host time or is CPU work
  std::vector<Host> hosts_;
  int64_t queue_depth_ = 1024;

  // Run state.
  Engine engine_;
  double loop_cpu_s_ = 0;
  std::vector<Resource> streams_;
  std::vector<Pool> pools_;
  std::optional<LinkNetwork> network_;
  std::vector<uint32_t> ready_, batch_;
  bool dispatch_pending_ = false;
  std::vector<int64_t> busy_, stream_ops_;
  std::array<int64_t, static_cast<size_t>(hw::KernelSource::kNone) + 1> priced_by_{};  // ops per cost source
  size_t finished_ = 0;
  int64_t iteration_ = 0;
  std::vector<traces::OpRecord> records_;

  // Contention (contended_ empty without rules or shared cores): per stream, what slows it and the
  // rules it is beside of; per rule, the stream it slows and how many of its beside streams run an
  // op now.
  const std::vector<ContentionRule>& rules_;
  const SharedCores& cores_;
  std::vector<Contended> contended_;
  std::vector<std::vector<int>> beside_of_;
  std::vector<int> slowed_stream_, running_beside_;
  std::vector<int> sharing_;  // the streams whose ops the shared cores slow
  int64_t runnable_ = 0;      // threads runnable on the shared cores now, in millionths (no drift)
  uint32_t pace_version_ = 0;  // the last version handed out, over all streams (see next_version)
};

void Run::init() {
  for (const auto& s : header_.streams) stream_names_.push_back(s.name);
  constexpr size_t kScanStreams = 16;
  if (stream_names_.size() > kScanStreams)
    for (size_t i = stream_names_.size(); i-- > 0;) stream_index_[stream_names_[i]] = static_cast<int>(i);
  for (const auto& p : header_.pools) pool_names_.push_back(p.name);
  if (!rules_.empty() || cores_.cores > 0) {  // rules of streams the plan does not have change nothing
    contended_.resize(stream_names_.size());
    beside_of_.resize(stream_names_.size());
    running_beside_.assign(rules_.size(), 0);
    slowed_stream_.assign(rules_.size(), -1);
    for (size_t k = 0; k < rules_.size(); ++k) {
      const int s = find_stream(rules_[k].stream);
      if (s < 0) continue;
      slowed_stream_[k] = s;
      contended_[static_cast<size_t>(s)].rules.push_back(static_cast<int>(k));
      for (const auto& b : rules_[k].beside)
        if (const int bs = find_stream(b); bs >= 0) beside_of_[static_cast<size_t>(bs)].push_back(static_cast<int>(k));
    }
    if (cores_.cores > 0) {
      for (const auto& [name, n] : cores_.threads)
        if (const int s = find_stream(name); s >= 0 && n > 0) {
          contended_[static_cast<size_t>(s)].threads = n;
          sharing_.push_back(s);
        }
      for (const auto& [name, n] : cores_.load_threads)
        if (const int s = find_stream(name); s >= 0) contended_[static_cast<size_t>(s)].load = n;
    }
  }
  PROTWIN_CHECK(pool_names_.size() <= kMaxPools, "plan: at most ", kMaxPools, " pools, got ",
                pool_names_.size());
  std::vector<LinkCapacity> caps;
  for (const auto& l : cost_model_.links()) caps.push_back(LinkCapacity{l.name, l.GBps});
  network_.emplace(engine_, std::move(caps), kPrioEnd);
  changes_per_pool_.assign(pool_names_.size(), 0);
  last_on_stream_.assign(stream_names_.size(), -1);
  last_id_on_stream_.assign(stream_names_.size(), -1);
  host_of_stream_.assign(stream_names_.size(), -1);
  if (streamed_) {
    std::vector<std::string> ranks;
    for (const auto& name : stream_names_) {
      const std::string rank = traces::host_of_stream(name);
      int r = find_name(ranks, rank);
      if (r < 0) r = static_cast<int>(ranks.size()), ranks.push_back(rank);
      rank_of_stream_.push_back(static_cast<uint32_t>(r));
    }
    live_per_rank_.assign(ranks.size(), 0);
  }
  resize_slots(std::max<size_t>(streamed_ ? 1024 : 1, source_.size_hint()));
  if (!streamed_) {  // a plan (the header is the whole plan): an edge per dependency and stream predecessor
    size_t edges = 0, effects = 0;
    for (const auto& op : header_.ops) edges += op.deps.size() + 1, effects += op.mem.size();
    reserve_huge(edges_, edges);
    reserve_huge(mem_, effects);
  }

  while (source_.wants_more() && pull()) {
  }
  for (const auto& [d, i] : forward_deps_) {
    PROTWIN_CHECK(d < gen_, traces::describe_op(header_, op(i)), ": dependency on unknown op ", d);
    link(d, i);
  }
  forward_deps_.clear();

  streams_.reserve(stream_names_.size());
  for (size_t s = 0; s < stream_names_.size(); ++s) streams_.emplace_back(engine_, 1);
  pools_.reserve(header_.pools.size());
  for (size_t p = 0; p < header_.pools.size(); ++p) {
    pools_.emplace_back(header_.pools[p].name, header_.pools[p].capacity, header_.pools[p].initial);
    pools_.back().reserve(1 + changes_per_pool_[p]);
  }
  busy_.assign(stream_names_.size(), 0);
  stream_ops_.assign(stream_names_.size(), 0);
}

// Takes the source's next op; false at the end.
bool Run::pull() {
  if (exhausted_) return false;
  const traces::Op* op = source_.next();
  if (!op) {
    exhausted_ = true;
    return false;
  }
  add_op(*op);
  return true;
}

// Grows the slot arrays to n slots (ops keep their slots); streamed, the new slots are free.
void Run::resize_slots(size_t n) {
  const size_t old = state_.size();
  if (old == 0) {
    resize_huge(state_, n);
    if (!streamed_) resize_huge(op_of_, n);
    resize_huge(succ_tail_, n);
    resize_huge(waiting_, n);
  } else {
    state_.resize(n);
    if (!streamed_) op_of_.resize(n);
    succ_tail_.resize(n);
    if (!host_states_.empty()) host_states_.resize(n);
    waiting_.resize(n);
  }
  if (!streamed_) return;
  kind_of_.resize(n);
  for (size_t k = n; k-- > old;) free_slots_.push_back(static_cast<uint32_t>(k));
}

// The slot for op `id`: its id in a plan's run, else a free one.
uint32_t Run::take_slot(uint32_t id) {
  if (!streamed_) {
    if (id >= state_.size()) resize_slots(2 * state_.size());
    return id;
  }
  if (free_slots_.empty()) resize_slots(2 * state_.size());
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  PROTWIN_ASSERT(slot_of_.insert(id, slot), "op ", id, " generated twice (OpSource contract)");
  return slot;
}

// A streamed op has ended and its record is out: the source may drop it, its slot is reused.
void Run::free_slot(size_t i) {
  const OpState& st = at(i);
  source_.release(static_cast<int>(st.id), st.stream);
  slot_of_.erase(st.id);
  if (last_on_stream_[static_cast<size_t>(st.stream)] == static_cast<int32_t>(i))
    last_on_stream_[static_cast<size_t>(st.stream)] = -1;
  free_slots_.push_back(static_cast<uint32_t>(i));
  --live_;
  --live_per_rank_[rank_of_stream_[static_cast<size_t>(st.stream)]];
}

// `to` waits for `from` (unless `from` has ended): an edge at the end of from's successors, so
// successors stay in id order.
void Run::link(uint32_t from, uint32_t to) {
  if (at(from).end >= 0) return;
  link_edge(from, to);
  ++waiting(to);
}

// The edge alone (`to` already counts `from` among what it waits for).
void Run::link_edge(uint32_t from, uint32_t to) {
  uint32_t e = free_edge_;
  if (e != kNone) {
    free_edge_ = edges_[e].next;
    edges_[e] = Edge{to, kNone};
  } else {
    e = static_cast<uint32_t>(edges_.size());
    edges_.push_back(Edge{to, kNone});
  }
  uint32_t& tail = succ_tail_[from];
  if (tail == kNone) at(from).succ_head = e;
  else edges_[tail].next = e;
  tail = e;
}

void Run::add_op(const traces::Op& op) {
  PROTWIN_CHECK(gen_ < (uint64_t{1} << 31), "plan: too many ops (", gen_ + 1, ")");
  if (streamed_) {
    PROTWIN_ASSERT(op.id >= 0, traces::describe_op(header_, op), ": negative op id");
  } else {
    PROTWIN_CHECK(op.id == static_cast<int>(gen_), traces::describe_op(header_, op), ": op ids must be dense: ",
                  "expected id ", gen_);
  }
  const auto id = static_cast<uint32_t>(op.id);
  const uint32_t i = take_slot(id);
  ++gen_;
  peak_live_ = std::max(peak_live_, ++live_);
  OpState& st = at(i);
  st = OpState{};
  st.id = id;
  if (!streamed_) op_of_[i] = &op;
  succ_tail_[i] = kNone;
  if (!host_states_.empty()) host_states_[i] = HostState{};
  if (streamed_) kind_of_[i] = op.kind;
  waiting(i) = 0;
  const int s = last_stream_ >= 0 && stream_names_[static_cast<size_t>(last_stream_)] == op.stream
                    ? last_stream_
                    : find_stream(op.stream);
  traces::check_op(header_, op, s);
  last_stream_ = s;
  st.stream = s;
  if (streamed_)
    peak_live_rank_ = std::max(peak_live_rank_, ++live_per_rank_[rank_of_stream_[static_cast<size_t>(s)]]);
  st.priority = op.priority;

  // The stream's previous op (in id order), if still held.
  const int prev = last_on_stream_[static_cast<size_t>(s)];
  const int64_t prev_id = last_id_on_stream_[static_cast<size_t>(s)];
  PROTWIN_ASSERT(prev_id < static_cast<int64_t>(id), traces::describe_op(header_, op), ": generated after op ", prev_id,
                 " of its stream (OpSource contract: a stream's ops in id order)");
  last_on_stream_[static_cast<size_t>(s)] = static_cast<int32_t>(i);
  last_id_on_stream_[static_cast<size_t>(s)] = id;
  bool prev_listed = false;
  for (int d : op.deps) {
    const auto dep = static_cast<uint32_t>(d);
    if (d == prev_id) prev_listed = true;
    if (!streamed_) {
      if (dep > id) {  // linked once every op is taken
        forward_deps_.emplace_back(dep, id);
        ++waiting(i);
      } else {
        link(dep, i);
      }
      continue;
    }
    const uint32_t held = slot_of_.find(dep);
    if (held != kNone) {
      link(held, i);
    } else if (!source_.generated(d)) {  // waits for it by id
      awaited_[dep].push_back(i);
      ++waiting(i);
    }  // else it has ended
  }
  if (prev >= 0 && !prev_listed) link(static_cast<uint32_t>(prev), i);

  take_cost(i, op);
  if (has_hosts_ && host_state(i).host_ns > 0) {  // issued by its stream's host thread: it waits for its launch
    HostState& x = host_state(i);
    if (host_of_stream_[static_cast<size_t>(s)] < 0) {
      const std::string name = traces::host_of_stream(stream_names_[static_cast<size_t>(s)]);
      size_t h = 0;
      while (h < hosts_.size() && hosts_[h].name != name) ++h;
      if (h == hosts_.size()) {
        PROTWIN_ASSERT(!loop_started_, traces::describe_op(header_, op), ": host ", name,
                       " issues its first op after the simulation started (OpSource contract)");
        if (hosts_.empty()) {
          queue_depth_ = cost_model_.launch_queue_depth();
          PROTWIN_ASSERT(queue_depth_ >= 1, "launch queue depth ", queue_depth_, " < 1");
        }
        hosts_.push_back(Host{name, {}, 0, -1, false, 0, false, 0});
      }
      host_of_stream_[static_cast<size_t>(s)] = static_cast<int32_t>(h);
    }
    x.host = host_of_stream_[static_cast<size_t>(s)];
    Host& host = hosts_[static_cast<size_t>(x.host)];
    PROTWIN_ASSERT(host.last_id < static_cast<int64_t>(id), traces::describe_op(header_, op), ": generated after op ",
                   host.last_id, " of host ", host.name, " (OpSource contract: a host's ops in id order)");
    host.last_id = id;
    host.ops.push_back(i);
    ++host.n_ops;
    ++waiting(i);  // the launch
    for (int d : op.deps) {
      const auto dep = static_cast<uint32_t>(d);
      if (streamed_) {
        const uint32_t held = slot_of_.find(dep);
        if (held == kNone || !(host_state(held).host_flags & kCpuWork)) continue;
      } else if (dep >= id || !(host_state(dep).host_flags & kCpuWork)) {
        continue;
      }
      x.host_flags |= kCpuDep;
      cpu_deps_[i].push_back(dep);
    }
  }

  OpState& t = at(i);
  t.mem_begin = static_cast<uint32_t>(mem_.size());
  // Start effects first, then end effects. The effects at one instant are summed per pool (in
  // first-mention order): a release listed after an allocation is no transient peak.
  for (int pass = 0; pass < 2; ++pass) {
    const traces::MemAt when = pass == 0 ? traces::MemAt::kStart : traces::MemAt::kEnd;
    const size_t first = mem_.size();
    if (pass == 1) t.mem_split = static_cast<uint32_t>(first);
    for (const auto& m : op.mem) {
      if (m.at != when) continue;
      const int p = find_name(pool_names_, m.pool);
      PROTWIN_CHECK(p >= 0, traces::describe_op(header_, op), ": memory effect on unknown pool \"", m.pool, "\"");
      int64_t delta = m.delta_bytes;
      size_t k = first;
      while (k < mem_.size() && (mem_[k] & (kMaxPools - 1)) != p) ++k;
      if (k < mem_.size()) delta += (mem_[k] - p) / kMaxPools;
      PROTWIN_CHECK(delta < kMaxDelta && delta > -kMaxDelta, traces::describe_op(header_, op),
                    ": memory effect of ", delta, " bytes is out of range");
      if (k < mem_.size()) {
        mem_[k] = delta * kMaxPools + p;
      } else {
        mem_.push_back(delta * kMaxPools + p);
        ++changes_per_pool_[static_cast<size_t>(p)];
      }
    }
  }
  t.mem_end = static_cast<uint32_t>(mem_.size());
  PROTWIN_CHECK(mem_.size() < (uint64_t{1} << 32), "plan: too many memory effects (", mem_.size(), ")");

  if (waiting(i) == 0) {
    PROTWIN_ASSERT(!loop_started_, traces::describe_op(header_, op),
                   ": generated after every op it waits for had ended (OpSource contract)");
    make_ready(i);
  }
  if (!awaited_.empty()) {  // ops generated before it wait for it
    auto it = awaited_.find(id);
    if (it != awaited_.end()) {
      for (uint32_t w : it->second) link_edge(i, w);
      awaited_.erase(it);
    }
  }
}

// Op i's cost, its phases in order onto what runs them: the host thread's launch (HostState),
// then the stream's time (OpState::fixed), then the transfer over its links (a route).
void Run::take_cost(size_t i, const traces::Op& op) {
  const hw::OpCost c = cost_model_.cost(op, header_);
  ++priced_by_[static_cast<size_t>(c.source)];
  OpState& t = at(i);
  int64_t host_ns = 0;
  uint8_t flags = 0;
  int last = -1;
  for (uint8_t k = 0; k < c.n; ++k) {
    const hw::Phase& p = c.phases[k];
    const int order = p.on == hw::PhaseOn::kHost ? 0 : p.on == hw::PhaseOn::kLinks ? 2 : 1;
    PROTWIN_ASSERT(order > last, traces::describe_op(header_, op),
                   ": cost phases out of order (a host's, a stream's, a transfer, at most one each)");
    last = order;
    PROTWIN_ASSERT(p.time.ns >= 0 && p.bytes >= 0 && p.max_GBps >= 0, traces::describe_op(header_, op),
                   ": negative phase time, transfer bytes or rate cap");
    switch (p.on) {
      case hw::PhaseOn::kHost:
        host_ns = p.time.ns;
        if (p.until_end) flags |= kSync;
        break;
      case hw::PhaseOn::kCpu: flags |= kCpuWork; [[fallthrough]];
      case hw::PhaseOn::kDevice: t.fixed = p.time.ns; break;
      case hw::PhaseOn::kLinks:
        t.link_bytes = p.bytes;
        if (p.bytes > 0 && p.links[0] >= 0) t.route = route_id(p, op);
        break;
    }
  }
  if (host_ns > 0 || flags != 0) {
    if (!has_hosts_) {
      has_hosts_ = true;
      host_states_.resize(state_.size());
    }
    host_state(i).host_ns = host_ns;
    host_state(i).host_flags = flags;
  }
}

int32_t Run::route_id(const hw::Phase& transfer, const traces::Op& op) {
  for (size_t r = 0; r < routes_.size(); ++r) {
    if (routes_[r].links == transfer.links && routes_[r].max_GBps == transfer.max_GBps) return static_cast<int32_t>(r);
  }
  for (int k = 0; k < transfer.n_links(); ++k) {
    PROTWIN_ASSERT(transfer.links[static_cast<size_t>(k)] < network_->n_links(), traces::describe_op(header_, op),
                   ": cost model names link ", transfer.links[static_cast<size_t>(k)], " of ",
                   network_->n_links());
  }
  routes_.push_back(Route{transfer.links, transfer.n_links(), transfer.max_GBps});
  return static_cast<int32_t>(routes_.size() - 1);
}

// Called after every event: starts the ready ops. A dispatch event at (now, kPrioDispatch) would
// run next anyway when no other event is due at `now`, so then they start at once; otherwise
// the event keeps ends-before-starts at equal time.
void Run::flush_ready() {
  while (!ready_.empty() && !dispatch_pending_) {
    if (engine_.next_time() > engine_.now()) {
      dispatch();  // may make zero-duration ops' successors ready: loop
    } else {
      dispatch_pending_ = true;
      engine_.schedule(engine_.now(), kPrioDispatch, this, payload(kDispatch, 0));
    }
  }
}

void Run::dispatch() {
  dispatch_pending_ = false;
  if (ready_.size() == 1) {  // the common case: nothing to order
    const uint32_t i = ready_.back();
    ready_.clear();
    if (streams_[static_cast<size_t>(at(i).stream)].acquire(this, payload(kGranted, i), kPrioDispatch)) {
      begin(i);
    }
    return;
  }
  batch_.swap(ready_);
  ready_.clear();
  if (batch_.size() > 1) {
    std::sort(batch_.begin(), batch_.end(), [this](uint32_t a, uint32_t b) {
      const int32_t pa = at(a).priority, pb = at(b).priority;
      return pa != pb ? pa < pb : streamed_ ? at(a).id < at(b).id : a < b;  // a plan's slots are its ids
    });
  }
  for (uint32_t i : batch_) {
    if (streams_[static_cast<size_t>(at(i).stream)].acquire(this, payload(kGranted, i), kPrioDispatch)) {
      begin(i);
    }
  }
  batch_.clear();
}

void Run::try_launch(size_t h) {
  if (hosts_[h].busy || hosts_[h].pending >= queue_depth_) return;
  while (hosts_[h].ops.empty() && !exhausted_ && !hosts_[h].drained) {
    if (!source_.more_for_host(hosts_[h].name)) {
      hosts_[h].drained = true;
      break;
    }
    bool took = false;
    while (source_.wants_more() && pull()) took = true;
    if (!took && !pull()) break;
  }
  Host& host = hosts_[h];
  if (host.ops.empty()) return;
  const uint32_t i = host.ops.front();
  if (host_state(i).host_flags & kCpuDep) {  // a handoff from CPU work (the CPU optimizer): wait for it
    for (uint32_t d : cpu_deps_[i]) {
      if (!ended(d)) return;
    }
  }
  host.busy = true;
  host_state(i).launch_start = engine_.now().ns;
  engine_.schedule(SimTime(engine_.now().ns + host_state(i).host_ns), kPrioEnd, this, payload(kLaunched, i));
}

void Run::launched(size_t i) {
  HostState& st = host_state(i);
  const auto h = static_cast<size_t>(st.host);
  Host& host = hosts_[h];
  st.launch_end = engine_.now().ns;
  host.busy_ns += st.launch_end - st.launch_start;
  PROTWIN_ASSERT(!host.ops.empty() && host.ops.front() == i, "host ", host.name, " launched op ", i, " out of order");
  host.ops.pop_front();
  if (st.host_flags & kCpuDep) cpu_deps_.erase(static_cast<uint32_t>(i));
  ++host.pending;
  if (--waiting(i) == 0) make_ready(i);
  if (st.host_flags & kSync) {
    st.wakes = static_cast<int32_t>(h) + 1;  // blocked until the op ends
  } else {
    host.busy = false;
    try_launch(h);
  }
}

void Run::apply_mem(size_t i, bool at_end) {
  const SimTime now = engine_.now();
  const OpState& st = at(i);
  const uint32_t from = at_end ? st.mem_split : st.mem_begin;
  const uint32_t to = at_end ? st.mem_end : st.mem_split;
  for (uint32_t k = from; k < to; ++k) {
    const int64_t m = mem_[k];
    const int64_t pool = m & (kMaxPools - 1);
    pools_[static_cast<size_t>(pool)].change(m >> 6, now,  // = (m - pool) / kMaxPools, exactly
                                             [&] { return traces::describe_op(header_, op(i)); });
  }
}

void Run::begin(size_t i) {
  if (streamed_) {  // the source may want to generate what follows this op before it ends
    source_.starting(static_cast<int>(at(i).id), at(i).stream);
    while (source_.wants_more() && pull()) {
    }
  }
  OpState& st = at(i);
  st.start = engine_.now().ns;
  apply_mem(i, false);
  if (!contended_.empty()) {
    begin_contended(i);
  } else if (st.fixed == 0) {
    after_fixed(i);
  } else {
    schedule_fixed(i, st.fixed, 0);
  }
}

// begin() in a run with contention rules or shared cores: the op may slow other streams, and its
// own stream phase goes at its stream's pace.
void Run::begin_contended(size_t i) {
  running(i, +1);
  const OpState& st = at(i);
  if (st.fixed == 0) {
    after_fixed(i);
    return;
  }
  Contended& c = contended_[static_cast<size_t>(st.stream)];
  if (c.rules.empty() && c.threads == 0) {
    schedule_fixed(i, st.fixed, 0);
    return;
  }
  c.op = static_cast<int64_t>(i);
  c.work = static_cast<double>(st.fixed);
  c.since = engine_.now().ns;
  c.slowdown = slowdown(static_cast<size_t>(st.stream));
  schedule_fixed(i, paced_ns(i, c), next_version(c));
}

// The version of a contended phase's next end: one counter for the run, so a stale event can match
// no other phase (a streamed run reuses an ended op's slot for an op of another stream); 24 bits,
// never 0.
uint32_t Run::next_version(Contended& c) {
  pace_version_ = pace_version_ % 0xffffffu + 1;
  c.version = pace_version_;
  return c.version;
}

// The rest of a contended phase's work at its pace, in ns from now (the product may not fit an
// int64: past the horizon it is an error naming the op).
int64_t Run::paced_ns(size_t i, const Contended& c) {
  const double ns = c.work * c.slowdown;
  if (!(ns >= 0 && ns <= static_cast<double>(kSimHorizonNs - engine_.now().ns))) fail_horizon(i, ns, " at its contended pace");
  return std::llround(ns);
}

// The end of op i's stream phase, `ns` from now (a contended one's with its version). Inline and
// without the error's formatting: every op with a stream phase passes here.
void Run::schedule_fixed(size_t i, int64_t ns, uint32_t version) {
  const int64_t now = engine_.now().ns;
  if (ns > kSimHorizonNs - now) fail_horizon(i, static_cast<double>(ns), "");
  const bool transfer = at(i).route >= 0;
  engine_.schedule(SimTime(now + ns), transfer ? kPrioTransfer : kPrioEnd, this,
                   payload(version ? kPaced : transfer ? kFixedDone : kEnd, i, version));
}

void Run::fail_horizon(size_t i, double ns, const char* pace) {
  throw Error(detail::concat(traces::describe_op(header_, op(i)), ": takes ", ns * 1e-9, " s from ",
                             engine_.now().seconds(), " s on", pace, ", past the simulator's horizon of 2^62 ns "
                             "(146 years); the plan's work, the cost model's rates or the slowdowns are out of range"));
}

// A contended stream phase's end: its latest (the phase is done), or one since moved (nothing).
void Run::paced_end(size_t i, uint64_t version) {
  Contended& c = contended_[static_cast<size_t>(at(i).stream)];  // (a streamed slot may hold another op now)
  if (c.op != static_cast<int64_t>(i) || c.version != version) return;
  c.op = -1;
  if (at(i).route >= 0) after_fixed(i);
  else finish(i);
}

// Op i starts (+1) or ends (-1) on its stream: the streams it slows change pace. A stream waits
// in a rendezvous from its kArrive op's end to its next op's start. Ops that take no time slow
// nothing.
void Run::running(size_t i, int delta) {
  const OpState& st = at(i);
  Contended& self = contended_[static_cast<size_t>(st.stream)];
  if (delta > 0 && self.waiting) {
    self.waiting = false;
    runnable(-cores_.wait_threads);
  }
  if (delta < 0 && cores_.cores > 0 && cores_.wait_threads > 0 && (streamed_ ? kind_of_[i] : op_of_[i]->kind) == traces::OpKind::kArrive) {
    self.waiting = true;
    runnable(cores_.wait_threads);
  }
  if (st.fixed == 0 && st.route < 0) return;
  if (self.threads + self.load > 0) runnable(delta * (self.threads + self.load));
  for (int k : beside_of_[static_cast<size_t>(st.stream)]) {
    const int before = running_beside_[static_cast<size_t>(k)];
    running_beside_[static_cast<size_t>(k)] += delta;
    if ((before == 0) != (running_beside_[static_cast<size_t>(k)] == 0))
      repace(static_cast<size_t>(slowed_stream_[static_cast<size_t>(k)]));
  }
}

// More or fewer threads runnable on the shared cores: every sharing stream's op changes pace.
void Run::runnable(double delta) {
  runnable_ += std::llround(delta * 1e6);
  for (int s : sharing_) repace(static_cast<size_t>(s));
}

double Run::slowdown(size_t s) const {
  double f = 1;
  for (int k : contended_[s].rules)
    if (running_beside_[static_cast<size_t>(k)] > 0) f += rules_[static_cast<size_t>(k)].slowdown - 1;
  PROTWIN_CHECK(f > 0, "stream ", stream_names_[s], ": its contention rules slow it by 1 + the sum of their slowdown - 1 = ",
                f, " here, not a pace (each slowdown is a ratio of times near or above 1)");
  const int64_t cores = int64_t{cores_.cores} * 1000000;
  if (contended_[s].threads > 0 && runnable_ > cores) f *= static_cast<double>(runnable_) / static_cast<double>(cores);
  return f;
}

// Stream s's op in its stream phase goes at a new pace from now: the work done so far at the old
// one, the rest at the new; its end moves (the old end's event is then stale).
void Run::repace(size_t s) {
  Contended& c = contended_[s];
  if (c.op < 0) return;
  const double pace = slowdown(s);
  if (pace == c.slowdown) return;  // its end stands
  const int64_t now = engine_.now().ns;
  c.work = std::max(0.0, c.work - static_cast<double>(now - c.since) / c.slowdown);
  c.since = now;
  c.slowdown = pace;
  const auto i = static_cast<size_t>(c.op);
  schedule_fixed(i, paced_ns(i, c), next_version(c));
}

void Run::after_fixed(size_t i) {
  const OpState& st = at(i);
  if (st.route >= 0) {
    const Route& r = routes_[static_cast<size_t>(st.route)];
    network_->start(r.links.data(), r.n_links, st.link_bytes, r.max_GBps, this, payload(kTransferDone, i));
  } else {
    finish(i);
  }
}

void Run::finish(size_t i) {
  const int64_t now = engine_.now().ns;
  at(i).end = now;
  iteration_ = std::max(iteration_, now);
  apply_mem(i, true);
  const auto s = static_cast<size_t>(at(i).stream);
  if (!contended_.empty()) running(i, -1);
  busy_[s] += now - at(i).start;
  ++stream_ops_[s];
  streams_[s].release();
  ++finished_;
  if (has_hosts_) {
    const int32_t host = host_state(i).host;
    if (host >= 0) {
      const auto h = static_cast<size_t>(host);
      --hosts_[h].pending;
      if (host_state(i).wakes == 0) try_launch(h);  // may take more ops: host_state(i) is read again below
    }
    if (host_state(i).wakes != 0) {  // the end of a host_sync op
      const auto h = static_cast<size_t>(host_state(i).wakes - 1);
      host_state(i).wakes = 0;
      hosts_[h].busy = false;
      try_launch(h);
    }
    if (host_state(i).host_flags & kCpuWork) {  // CPU work (rare): any host may wait for it
      for (size_t h = 0; h < hosts_.size(); ++h) try_launch(h);
    }
  }
  for (uint32_t e = at(i).succ_head; e != kNone;) {
    const uint32_t j = edges_[e].to, next = edges_[e].next;
    if (--waiting(j) == 0) make_ready(j);
    edges_[e].next = free_edge_;
    free_edge_ = e;
    e = next;
  }
  if (streamed_) {
    put_record(i);
    free_slot(i);
  }
}

traces::OpRecord Run::record(size_t i) {
  const OpState& st = at(i);

  traces::OpRecord r = streamed_ ? traces::OpRecord{static_cast<int>(st.id), traces::to_string(kind_of_[i]),
                                                    stream_names_[static_cast<size_t>(st.stream)], SimTime(st.start),
                                                    SimTime(st.end), std::nullopt}
                                 : traces::OpRecord{static_cast<int>(st.id), traces::to_string(op_of_[i]->kind), op_of_[i]->stream,
                                                    SimTime(st.start), SimTime(st.end), std::nullopt};
  if (has_hosts_ && host_state(i).launch_start >= 0) r.launch = {SimTime(host_state(i).launch_start), SimTime(host_state(i).launch_end)};
  return r;
}

// A streamed op has ended: its record goes out now (any order), or once every op before it has.
void Run::put_record(size_t i) {
  traces::OpRecord r = record(i);
  if (any_order_ || r.id != static_cast<int>(next_out_)) {
    if (any_order_) {
      deliver(std::move(r));
      return;
    }
    held_.emplace(static_cast<uint32_t>(r.id), std::move(r));
    peak_held_ = std::max<uint64_t>(peak_held_, held_.size());
    return;
  }
  deliver(std::move(r));
  ++next_out_;
  for (auto it = held_.find(next_out_); it != held_.end(); it = held_.find(++next_out_)) {
    deliver(std::move(it->second));
    held_.erase(it);
  }
}

void Run::deliver(traces::OpRecord&& r) {
  if (sink_) sink_(r);
  else records_.push_back(std::move(r));
}

void Run::on_event(uint64_t p) {
  const size_t i = static_cast<size_t>(p & 0xffffffffu);
  switch (p >> 32) {  // kind, and above it a kPaced event's version (never 0)
    case kDispatch: dispatch(); break;
    case kGranted: begin(i); break;
    case kFixedDone: after_fixed(i); break;
    case kEnd:
    case kTransferDone: finish(i); break;
    case kLaunched: launched(i); break;
    default: paced_end(i, p >> 40); break;
  }
  flush_ready();
}

traces::Report Run::simulate() {
  init();
  engine_.reserve(64);
  for (size_t h = 0; h < hosts_.size(); ++h) try_launch(h);
  loop_started_ = true;
  flush_ready();
  const double t0 = traces::thread_cpu_seconds();
  engine_.run();
  loop_cpu_s_ = traces::thread_cpu_seconds() - t0;
  if (finished_ != gen_) {
    for (size_t i = 0; i < state_.size(); ++i) {
      if (streamed_) {
        if (slot_of_.find(at(i).id) != i) continue;  // a free slot
      }
      if (!streamed_ && i >= gen_) break;
      for (const auto& [id, waiters] : awaited_)
        for (uint32_t w : waiters)
          PROTWIN_ASSERT(w != i, traces::describe_op(header_, op(i)), ": waits for op ", id,
                         ", never generated (OpSource contract)");
      PROTWIN_CHECK(at(i).end >= 0, traces::describe_op(header_, op(i)),
                    ": never ran: its dependencies (deps and the in-order stream) form a cycle");
    }
  }
  PROTWIN_ASSERT(exhausted_ || source_.next() == nullptr,
                 "op source: ops left when every generated op had run (OpSource contract)");
  return report();
}

traces::Report Run::report() {
  traces::Report r;
  r.meta = nlohmann::json::object();
  r.meta["source"] = "sim";
  r.meta["plan"] = traces::plan_meta_json(header_);
  nlohmann::json links = nlohmann::json::array();
  for (int l = 0; l < network_->n_links(); ++l) {
    links.push_back({{"name", network_->link(l).name}, {"GBps", network_->link(l).GBps}});
  }
  r.meta["links"] = std::move(links);

  if (!streamed_) {  // every op is still held, op i in slot i
    reserve_huge(records_, gen_);
    for (size_t i = 0; i < gen_; ++i) records_.push_back(record(i));
  }
  PROTWIN_ASSERT(held_.empty(), "records held back at the end of the run");
  r.ops = std::move(records_);
  r.iteration = SimTime(iteration_);
  r.streams.resize(header_.streams.size());
  for (size_t s = 0; s < header_.streams.size(); ++s) {
    r.streams[s].name = header_.streams[s].name;
    r.streams[s].busy = SimTime(busy_[s]);
    r.streams[s].ops = stream_ops_[s];
  }
  for (const Host& h : hosts_) {
    r.hosts.push_back(traces::StreamRecord{h.name, SimTime(h.busy_ns), h.n_ops});
  }
  for (size_t k = 0; k + 1 < priced_by_.size(); ++k)  // ops that cost nothing are not counted
    if (priced_by_[k] > 0) r.priced_by[hw::kernel_source_name(static_cast<hw::KernelSource>(k))] = priced_by_[k];
  r.pools.resize(pools_.size());
  for (size_t p = 0; p < pools_.size(); ++p) {
    r.pools[p].name = pools_[p].name();
    r.pools[p].capacity = pools_[p].capacity();
    r.pools[p].peak = pools_[p].high_water();
    r.pools[p].peak_at = pools_[p].high_water_at();
    r.pools[p].curve = pools_[p].take_curve();
  }
  return r;
}

}  // namespace

traces::Report PlanSimulator::run(const traces::Plan& plan, RunStats* stats) const {
  PlanOpSource source(plan);
  Run run(source, *cost_, contention_, cores_, false, nullptr, false);
  traces::Report r = run.simulate();
  if (stats) *stats = run.stats();
  return r;
}

traces::Report PlanSimulator::run(OpSource& source, RunStats* stats, const OpRecordSink& sink,
                                  bool any_order) const {
  Run run(source, *cost_, contention_, cores_, true, sink, any_order);
  traces::Report r = run.simulate();
  if (stats) *stats = run.stats();
  return r;
}

}  // namespace protwin::sim
