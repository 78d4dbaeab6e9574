#include "runtime/executor/plan_executor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "traces/error.h"

namespace protwin::rt {

PlanExecutor::PlanExecutor(const traces::Plan& plan) : plan_(plan) {
  stream_ops_.resize(plan.streams.size());
  for (const traces::Op& op : plan.ops) {
    const int s = plan.stream_index(op.stream);
    PROTWIN_ASSERT(s >= 0, describe_op(op), ": unknown stream (plan not validated?)");
    stream_ops_[static_cast<size_t>(s)].push_back(op.id);
  }
}

traces::Report PlanExecutor::run(OpRunner& runner, PoolLedger& ledger) const {
  using Clock = std::chrono::steady_clock;
  const size_t n = plan_.ops.size();
  std::vector<char> done(n, 0);
  std::vector<traces::OpRecord> records(n);
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr failure;
  bool abort = false;
  const auto t0 = Clock::now();
  auto now_ns = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  };

  // An op's effects at one instant land together (summed per pool, in first-mention order): a
  // release listed after an allocation must not show as a transient peak the plan never has.
  auto apply_mem = [&](const traces::Op& op, traces::MemAt at, int64_t t) {
    std::vector<std::pair<std::string, int64_t>> net;
    for (const traces::MemEffect& m : op.mem) {
      if (m.at != at) continue;
      auto it = std::find_if(net.begin(), net.end(), [&](const auto& p) { return p.first == m.pool; });
      if (it == net.end()) net.emplace_back(m.pool, m.delta_bytes);
      else it->second += m.delta_bytes;
    }
    for (const auto& [pool, delta] : net) ledger.apply(traces::describe_op(op), pool, delta, t);
  };

  auto worker = [&](const std::vector<int>& ids) {
    for (int id : ids) {
      const traces::Op& op = plan_.ops[static_cast<size_t>(id)];
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] {
          if (abort) return true;
          return std::all_of(op.deps.begin(), op.deps.end(),
                             [&](int d) { return done[static_cast<size_t>(d)] != 0; });
        });
        if (abort) return;
      }
      try {
        const int64_t start = now_ns();
        apply_mem(op, traces::MemAt::kStart, start);
        runner.run(op);
        const int64_t end = now_ns();
        apply_mem(op, traces::MemAt::kEnd, end);
        records[static_cast<size_t>(id)] = {op.id, traces::to_string(op.kind), op.stream, SimTime(start), SimTime(end)};
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        abort = true;
        cv.notify_all();
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      done[static_cast<size_t>(id)] = 1;
      cv.notify_all();
    }
  };

  std::vector<std::thread> threads;
  for (const std::vector<int>& ids : stream_ops_)
    if (!ids.empty()) threads.emplace_back(worker, std::cref(ids));
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);

  traces::Report report;
  // The iteration's start on the machine's monotonic clock: ranks on one host share it, so their
  // reports can be laid side by side (a collective's wait for its peer).
  report.meta = {{"source", "runtime"},
                 {"steady_start_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count()}};
  report.ops = std::move(records);
  int64_t iteration = 0;
  for (const traces::OpRecord& r : report.ops) iteration = std::max(iteration, r.end.ns);
  report.iteration = SimTime(iteration);
  for (size_t s = 0; s < plan_.streams.size(); ++s) {
    traces::StreamRecord sr;
    sr.name = plan_.streams[s].name;
    int64_t busy = 0;
    for (int id : stream_ops_[s]) {
      const traces::OpRecord& r = report.ops[static_cast<size_t>(id)];
      busy += r.end.ns - r.start.ns;
    }
    sr.busy = SimTime(busy);
    sr.ops = static_cast<int64_t>(stream_ops_[s].size());
    report.streams.push_back(sr);
  }
  report.pools = ledger.records();
  return report;
}

}  // namespace protwin::rt
