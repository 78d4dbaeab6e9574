#include "sim/engine/plan_simulator.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/huge_pages.h"
#include "sim/engine/link.h"
#include "sim/engine/pool.h"
#include "sim/engine/resource.h"
#include "traces/error.h"

namespace protwin::sim {

namespace {

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Event priorities at equal time: ends first, then transfer starts, then op starts.
constexpr int64_t kPrioEnd = 0;
constexpr int64_t kPrioTransfer = 1;
constexpr int64_t kPrioDispatch = 2;

// Payload = kind << 32 | op index.
enum EventKind : uint64_t { kDispatch = 0, kGranted = 1, kFixedDone = 2, kEnd = 3, kTransferDone = 4, kLaunched = 5 };
constexpr uint64_t payload(EventKind kind, size_t op) { return (uint64_t{kind} << 32) | op; }

// Memory effects are packed as delta * kMaxPools + pool in one int64.
constexpr int64_t kMaxPools = 64;  // = 1 << 6 (apply_mem shifts by 6)
constexpr int64_t kMaxDelta = int64_t{1} << 56;

// What an op costs, compactly: 24 bytes instead of OpCost's 40 (a 1M-op plan streams it once).
struct OpTime {
  int64_t fixed;      // ns
  double link_bytes;  // bytes over `route` after the fixed part
  int32_t route;      // index into Run::routes_; -1 = no transfer
};

struct Route {
  std::array<int, hw::OpCost::kMaxLinks> links;
  int n_links;
  double max_GBps;
};

// One rank's host thread (DESIGN §4, host dispatch): it issues its ops in op-id order, each for
// its host time; it waits while launch_queue_depth launches are unfinished, after a host_sync op
// until that op ends, and before an op that depends on CPU work until that work ends.
struct Host {
  std::string name;              // "host", or "stage0.host" for streams "stage0.*"
  std::vector<uint32_t> ops;     // the ops it issues, in id order
  size_t next = 0;               // ops[next] is the next to issue
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

// One simulation of one plan: all mutable state lives here.
class Run final : public Handler {
 public:
  Run(const traces::Plan& plan, const hw::CostModel& cost) : plan_(plan), cost_model_(cost) {}
  RunStats stats() const { return {engine_.events_run(), loop_cpu_s_}; }

  traces::Report simulate();
  void on_event(uint64_t p) override;

 private:
  void compile();
  int32_t route_id(const hw::OpCost& c, const traces::Op& op);
  void make_ready(size_t i);
  void dispatch();
  void flush_ready();
  void begin(size_t i);
  void after_fixed(size_t i);
  void finish(size_t i);
  void apply_mem(size_t i, bool at_end);
  void compile_hosts(const std::vector<std::string>& stream_names);
  void try_launch(size_t h);
  void launched(size_t i);
  traces::Report report();  // moves the pool curves out

  const traces::Plan& plan_;
  const hw::CostModel& cost_model_;
  size_t n_ = 0;

  // Compiled plan (CSR arrays; nothing allocated per op while simulating).
  std::vector<OpTime> times_;
  std::vector<Route> routes_;  // distinct (links, cap) of the plan's transfers
  std::vector<int32_t> stream_of_;
  std::vector<int32_t> priority_;
  std::vector<uint32_t> succ_begin_, succ_;
  std::vector<uint32_t> mem_begin_, mem_split_;  // op i: start effects [begin, split), end [split, begin[i+1])
  std::vector<int64_t> mem_;  // delta_bytes * kMaxPools + pool
  std::vector<int32_t> waiting_;  // unfinished dependencies per op
  // Host dispatch (empty when no op has a host time).
  std::vector<int64_t> host_ns_;
  std::vector<uint8_t> host_flags_;  // kSync | kCpuWork | kCpuDep
  std::vector<int32_t> host_of_;     // host index per op (-1: not issued by a host)
  std::vector<int32_t> wakes_;       // host_sync op: its host index + 1 while the host waits for it
  std::vector<int64_t> launch_start_, launch_end_;
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
  std::vector<int64_t> start_, end_;
  std::vector<int64_t> busy_, stream_ops_;
  size_t finished_ = 0;
};

enum HostFlag : uint8_t { kSync = 1, kCpuWork = 2, kCpuDep = 4 };

void Run::compile() {
  const auto& ops = plan_.ops;
  n_ = ops.size();
  PROTWIN_CHECK(n_ < (uint64_t{1} << 31), "plan: too many ops (", n_, ")");
  std::vector<std::string> stream_names, pool_names;
  for (const auto& s : plan_.streams) stream_names.push_back(s.name);
  for (const auto& p : plan_.pools) pool_names.push_back(p.name);
  std::vector<LinkCapacity> caps;
  for (const auto& l : cost_model_.links()) caps.push_back(LinkCapacity{l.name, l.GBps});
  network_.emplace(engine_, std::move(caps), kPrioEnd);

  resize_huge(times_, n_);
  resize_huge(stream_of_, n_);
  resize_huge(priority_, n_);
  resize_huge(waiting_, n_);
  resize_huge(mem_begin_, n_ + 1);
  resize_huge(mem_split_, n_);
  reserve_huge(mem_, n_ * 2);
  std::vector<size_t> changes_per_pool(pool_names.size(), 0);
  std::vector<int32_t> last_on_stream(stream_names.size(), -1);
  PROTWIN_CHECK(pool_names.size() <= kMaxPools, "plan: at most ", kMaxPools, " pools, got ",
                pool_names.size());
  // Predecessors of op i are pred_from[...] in op order (waiting_[i] of them); turned into the
  // successor CSR below.
  std::vector<uint32_t> pred_from;
  reserve_huge(pred_from, n_ * 2);
  int last_stream = -1;
  for (size_t i = 0; i < n_; ++i) {
    const traces::Op& op = ops[i];
    PROTWIN_CHECK(op.id == static_cast<int>(i), traces::describe_op(plan_, op), ": op ids must be dense: ",
                  "expected id ", i);
    int s = last_stream >= 0 && stream_names[static_cast<size_t>(last_stream)] == op.stream
                ? last_stream
                : find_name(stream_names, op.stream);
    PROTWIN_CHECK(s >= 0, traces::describe_op(plan_, op), ": unknown stream \"", op.stream, "\"");
    last_stream = s;
    stream_of_[i] = s;
    priority_[i] = op.priority;

    const int prev = last_on_stream[static_cast<size_t>(s)];
    last_on_stream[static_cast<size_t>(s)] = static_cast<int32_t>(i);
    bool prev_listed = false;
    for (int d : op.deps) {
      PROTWIN_CHECK(d >= 0 && d < static_cast<int>(n_), traces::describe_op(plan_, op), ": dependency on op ",
                    d, " which does not exist");
      PROTWIN_CHECK(d != op.id, traces::describe_op(plan_, op), ": depends on itself");
      if (d == prev) prev_listed = true;
      pred_from.push_back(static_cast<uint32_t>(d));
    }
    if (prev >= 0 && !prev_listed) pred_from.push_back(static_cast<uint32_t>(prev));
    waiting_[i] = static_cast<int32_t>(op.deps.size()) + (prev >= 0 && !prev_listed ? 1 : 0);

    const hw::OpCost c = cost_model_.cost(op, plan_);
    PROTWIN_ASSERT(c.fixed.ns >= 0, traces::describe_op(plan_, op), ": negative fixed time");
    PROTWIN_ASSERT(c.link_bytes >= 0 && c.max_GBps >= 0, traces::describe_op(plan_, op),
                   ": negative transfer bytes or rate cap");
    times_[i] = OpTime{c.fixed.ns, c.link_bytes, c.link_bytes > 0 && c.links[0] >= 0 ? route_id(c, op) : -1};
    PROTWIN_ASSERT(c.host.ns >= 0, traces::describe_op(plan_, op), ": negative host time");
    if (c.host.ns > 0 || c.host_sync || c.cpu_work) {
      if (host_ns_.empty()) {
        host_ns_.assign(n_, 0);
        host_flags_.assign(n_, 0);
      }
      host_ns_[i] = c.host.ns;
      host_flags_[i] = static_cast<uint8_t>((c.host_sync ? kSync : 0) | (c.cpu_work ? kCpuWork : 0));
    }

    mem_begin_[i] = static_cast<uint32_t>(mem_.size());
    // Start effects first, then end effects. The effects at one instant are summed per pool (in
    // first-mention order): a release listed after an allocation is no transient peak.
    for (int pass = 0; pass < 2; ++pass) {
      const traces::MemAt at = pass == 0 ? traces::MemAt::kStart : traces::MemAt::kEnd;
      const size_t first = mem_.size();
      if (pass == 1) mem_split_[i] = static_cast<uint32_t>(first);
      for (const auto& m : op.mem) {
        if (m.at != at) continue;
        const int p = find_name(pool_names, m.pool);
        PROTWIN_CHECK(p >= 0, traces::describe_op(plan_, op), ": memory effect on unknown pool \"", m.pool, "\"");
        int64_t delta = m.delta_bytes;
        size_t k = first;
        while (k < mem_.size() && (mem_[k] & (kMaxPools - 1)) != p) ++k;
        if (k < mem_.size()) delta += (mem_[k] - p) / kMaxPools;
        PROTWIN_CHECK(delta < kMaxDelta && delta > -kMaxDelta, traces::describe_op(plan_, op),
                      ": memory effect of ", delta, " bytes is out of range");
        if (k < mem_.size()) {
          mem_[k] = delta * kMaxPools + p;
        } else {
          mem_.push_back(delta * kMaxPools + p);
          ++changes_per_pool[static_cast<size_t>(p)];
        }
      }
    }
  }
  mem_begin_[n_] = static_cast<uint32_t>(mem_.size());
  PROTWIN_CHECK(mem_.size() < (uint64_t{1} << 32), "plan: too many memory effects (", mem_.size(), ")");

  // Successor CSR from the predecessor lists (successors come out in op order: deterministic).
  resize_huge(succ_begin_, n_ + 1, 0u);
  for (uint32_t from : pred_from) ++succ_begin_[from + 1];
  for (size_t i = 0; i < n_; ++i) succ_begin_[i + 1] += succ_begin_[i];
  resize_huge(succ_, pred_from.size());
  {
    std::vector<uint32_t> fill;
    reserve_huge(fill, n_);
    fill.assign(succ_begin_.begin(), succ_begin_.end() - 1);
    size_t k = 0;
    for (size_t i = 0; i < n_; ++i) {
      for (int32_t e = 0; e < waiting_[i]; ++e) succ_[fill[pred_from[k++]]++] = static_cast<uint32_t>(i);
    }
  }

  if (!host_ns_.empty()) compile_hosts(stream_names);
  streams_.reserve(stream_names.size());
  for (size_t s = 0; s < stream_names.size(); ++s) streams_.emplace_back(engine_, 1);
  pools_.reserve(plan_.pools.size());
  for (size_t p = 0; p < plan_.pools.size(); ++p) {
    pools_.emplace_back(plan_.pools[p].name, plan_.pools[p].capacity, plan_.pools[p].initial);
    pools_.back().reserve(1 + changes_per_pool[p]);
  }

  resize_huge(start_, n_, int64_t{-1});
  resize_huge(end_, n_, int64_t{-1});
  busy_.assign(stream_names.size(), 0);
  stream_ops_.assign(stream_names.size(), 0);
}

// Gives every op with a host time to its stream's host and makes it wait for its launch.
void Run::compile_hosts(const std::vector<std::string>& stream_names) {
  queue_depth_ = cost_model_.launch_queue_depth();
  PROTWIN_ASSERT(queue_depth_ >= 1, "launch queue depth ", queue_depth_, " < 1");
  std::vector<int32_t> host_of_stream(stream_names.size(), -1);
  host_of_.assign(n_, -1);
  wakes_.assign(n_, 0);
  launch_start_.assign(n_, -1);
  launch_end_.assign(n_, -1);
  for (size_t i = 0; i < n_; ++i) {
    if (host_ns_[i] == 0) continue;
    const auto s = static_cast<size_t>(stream_of_[i]);
    if (host_of_stream[s] < 0) {
      const std::string name = traces::host_of_stream(stream_names[s]);
      size_t h = 0;
      while (h < hosts_.size() && hosts_[h].name != name) ++h;
      if (h == hosts_.size()) hosts_.push_back(Host{name, {}, 0, 0, false, 0});
      host_of_stream[s] = static_cast<int32_t>(h);
    }
    host_of_[i] = host_of_stream[s];
    hosts_[static_cast<size_t>(host_of_[i])].ops.push_back(static_cast<uint32_t>(i));
    ++waiting_[i];  // the launch
    for (int d : plan_.ops[i].deps) {
      if (host_flags_[static_cast<size_t>(d)] & kCpuWork) host_flags_[i] |= kCpuDep;
    }
  }
}

int32_t Run::route_id(const hw::OpCost& c, const traces::Op& op) {
  for (size_t r = 0; r < routes_.size(); ++r) {
    if (routes_[r].links == c.links && routes_[r].max_GBps == c.max_GBps) return static_cast<int32_t>(r);
  }
  for (int k = 0; k < c.n_links(); ++k) {
    PROTWIN_ASSERT(c.links[static_cast<size_t>(k)] < network_->n_links(), traces::describe_op(plan_, op),
                   ": cost model names link ", c.links[static_cast<size_t>(k)], " of ",
                   network_->n_links());
  }
  routes_.push_back(Route{c.links, c.n_links(), c.max_GBps});
  return static_cast<int32_t>(routes_.size() - 1);
}

void Run::make_ready(size_t i) { ready_.push_back(static_cast<uint32_t>(i)); }

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
    if (streams_[static_cast<size_t>(stream_of_[i])].acquire(this, payload(kGranted, i), kPrioDispatch)) {
      begin(i);
    }
    return;
  }
  batch_.swap(ready_);
  ready_.clear();
  if (batch_.size() > 1) {
    std::sort(batch_.begin(), batch_.end(), [this](uint32_t a, uint32_t b) {
      return priority_[a] != priority_[b] ? priority_[a] < priority_[b] : a < b;
    });
  }
  for (uint32_t i : batch_) {
    if (streams_[static_cast<size_t>(stream_of_[i])].acquire(this, payload(kGranted, i), kPrioDispatch)) {
      begin(i);
    }
  }
  batch_.clear();
}

void Run::try_launch(size_t h) {
  Host& host = hosts_[h];
  if (host.busy || host.next == host.ops.size() || host.pending >= queue_depth_) return;
  const uint32_t i = host.ops[host.next];
  if (host_flags_[i] & kCpuDep) {  // a handoff from CPU work (the CPU optimizer): wait for it
    for (int d : plan_.ops[i].deps) {
      if ((host_flags_[static_cast<size_t>(d)] & kCpuWork) && end_[static_cast<size_t>(d)] < 0) return;
    }
  }
  host.busy = true;
  launch_start_[i] = engine_.now().ns;
  engine_.schedule(SimTime(engine_.now().ns + host_ns_[i]), kPrioEnd, this, payload(kLaunched, i));
}

void Run::launched(size_t i) {
  const auto h = static_cast<size_t>(host_of_[i]);
  Host& host = hosts_[h];
  launch_end_[i] = engine_.now().ns;
  host.busy_ns += launch_end_[i] - launch_start_[i];
  ++host.next;
  ++host.pending;
  if (--waiting_[i] == 0) make_ready(i);
  if (host_flags_[i] & kSync) {
    wakes_[i] = static_cast<int32_t>(h) + 1;  // blocked until the op ends
  } else {
    host.busy = false;
    try_launch(h);
  }
}

void Run::apply_mem(size_t i, bool at_end) {
  const SimTime now = engine_.now();
  const uint32_t from = at_end ? mem_split_[i] : mem_begin_[i];
  const uint32_t to = at_end ? mem_begin_[i + 1] : mem_split_[i];
  for (uint32_t k = from; k < to; ++k) {
    const int64_t m = mem_[k];
    const int64_t pool = m & (kMaxPools - 1);
    pools_[static_cast<size_t>(pool)].change(m >> 6, now,  // = (m - pool) / kMaxPools, exactly
                                             [&] { return traces::describe_op(plan_, plan_.ops[i]); });
  }
}

void Run::begin(size_t i) {
  start_[i] = engine_.now().ns;
  apply_mem(i, false);
  const OpTime& t = times_[i];
  if (t.fixed == 0) {
    after_fixed(i);
  } else {
    const bool transfer = t.route >= 0;
    const int64_t now = engine_.now().ns;
    PROTWIN_CHECK(t.fixed <= kSimHorizonNs - now, traces::describe_op(plan_, plan_.ops[i]), ": takes ",
                  SimTime(t.fixed).seconds(), " s from ", engine_.now().seconds(), " s on, past the simulator's "
                  "horizon of 2^62 ns (146 years); the plan's work or the cost model's rates are out of range");
    engine_.schedule(SimTime(now + t.fixed), transfer ? kPrioTransfer : kPrioEnd, this,
                     payload(transfer ? kFixedDone : kEnd, i));
  }
}

void Run::after_fixed(size_t i) {
  const OpTime& t = times_[i];
  if (t.route >= 0) {
    const Route& r = routes_[static_cast<size_t>(t.route)];
    network_->start(r.links.data(), r.n_links, t.link_bytes, r.max_GBps, this,
                    payload(kTransferDone, i));
  } else {
    finish(i);
  }
}

void Run::finish(size_t i) {
  const int64_t now = engine_.now().ns;
  end_[i] = now;
  apply_mem(i, true);
  const auto s = static_cast<size_t>(stream_of_[i]);
  busy_[s] += now - start_[i];
  ++stream_ops_[s];
  streams_[s].release();
  ++finished_;
  if (!host_ns_.empty()) {
    if (host_of_[i] >= 0) {
      const auto h = static_cast<size_t>(host_of_[i]);
      --hosts_[h].pending;
      if (wakes_[i] == 0) try_launch(h);
    }
    if (wakes_[i] != 0) {  // the end of a host_sync op
      const auto h = static_cast<size_t>(wakes_[i] - 1);
      wakes_[i] = 0;
      hosts_[h].busy = false;
      try_launch(h);
    }
    if (host_flags_[i] & kCpuWork) {  // CPU work (rare): any host may wait for it
      for (size_t h = 0; h < hosts_.size(); ++h) try_launch(h);
    }
  }
  for (uint32_t k = succ_begin_[i]; k < succ_begin_[i + 1]; ++k) {
    const uint32_t j = succ_[k];
    if (--waiting_[j] == 0) make_ready(j);
  }
}

void Run::on_event(uint64_t p) {
  const size_t i = static_cast<size_t>(p & 0xffffffffu);
  switch (static_cast<EventKind>(p >> 32)) {
    case kDispatch: dispatch(); break;
    case kGranted: begin(i); break;
    case kFixedDone: after_fixed(i); break;
    case kEnd:
    case kTransferDone: finish(i); break;
    case kLaunched: launched(i); break;
  }
  flush_ready();
}

traces::Report Run::simulate() {
  compile();
  engine_.reserve(64);
  for (size_t i = 0; i < n_; ++i) {
    if (waiting_[i] == 0) make_ready(i);
  }
  for (size_t h = 0; h < hosts_.size(); ++h) try_launch(h);
  flush_ready();
  const double t0 = thread_cpu_s();
  engine_.run();
  loop_cpu_s_ = thread_cpu_s() - t0;
  if (finished_ != n_) {
    for (size_t i = 0; i < n_; ++i) {
      PROTWIN_CHECK(end_[i] >= 0, traces::describe_op(plan_, plan_.ops[i]),
                    ": never ran: its dependencies (deps and the in-order stream) form a cycle");
    }
  }
  return report();
}

traces::Report Run::report() {
  traces::Report r;
  r.meta = nlohmann::json::object();
  r.meta["source"] = "sim";
  r.meta["plan"] = plan_.meta;
  nlohmann::json links = nlohmann::json::array();
  for (int l = 0; l < network_->n_links(); ++l) {
    links.push_back({{"name", network_->link(l).name}, {"GBps", network_->link(l).GBps}});
  }
  r.meta["links"] = std::move(links);

  int64_t iteration = 0;
  reserve_huge(r.ops, n_);
  for (size_t i = 0; i < n_; ++i) {
    const traces::Op& op = plan_.ops[i];
    r.ops.push_back(traces::OpRecord{op.id, op.kind, op.stream, SimTime(start_[i]), SimTime(end_[i]), std::nullopt});
    if (!launch_start_.empty() && launch_start_[i] >= 0) {
      r.ops.back().launch = {SimTime(launch_start_[i]), SimTime(launch_end_[i])};
    }
    iteration = std::max(iteration, end_[i]);
  }
  r.iteration = SimTime(iteration);
  r.streams.resize(plan_.streams.size());
  for (size_t s = 0; s < plan_.streams.size(); ++s) {
    r.streams[s].name = plan_.streams[s].name;
    r.streams[s].busy = SimTime(busy_[s]);
    r.streams[s].ops = stream_ops_[s];
  }
  for (const Host& h : hosts_) {
    r.hosts.push_back(traces::StreamRecord{h.name, SimTime(h.busy_ns), static_cast<int64_t>(h.ops.size())});
  }
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
  Run run(plan, *cost_);
  traces::Report r = run.simulate();
  if (stats) *stats = run.stats();
  return r;
}

}  // namespace protwin::sim
