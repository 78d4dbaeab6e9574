#include "runtime/profile/aten_op_recorder.h"

#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include "traces/error.h"

namespace protwin::rt {

namespace {

using Clock = std::chrono::steady_clock;

struct Sink {
  std::mutex mu;
  std::vector<AtenOpRecord> records;
  Clock::time_point t0;
  bool with_shapes = false;
  std::atomic<uint64_t> next_thread{0};
};

Sink* g_sink = nullptr;  // the live recorder's (one at a time)

struct ThreadState {
  int depth = 0;
  uint64_t id = ~uint64_t{0};
};
thread_local ThreadState t_state;

struct Started : at::ObserverContext {
  int64_t start_ns = 0;
  int depth = 0;
  std::vector<std::vector<int64_t>> shapes;
};

int64_t since_start(const Sink& s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s.t0).count();
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Sink* s = g_sink;
  if (s == nullptr) return nullptr;
  auto c = std::make_unique<Started>();
  if (s->with_shapes)
    for (const c10::IValue& v : fn.inputs())
      if (v.isTensor() && v.toTensor().defined()) c->shapes.push_back(v.toTensor().sizes().vec());
  c->depth = t_state.depth++;
  c->start_ns = since_start(*s);
  return c;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  Sink* s = g_sink;
  auto* c = static_cast<Started*>(ctx);
  if (s == nullptr || c == nullptr) return;
  const int64_t end = since_start(*s);
  --t_state.depth;
  if (t_state.id == ~uint64_t{0}) t_state.id = s->next_thread++;
  AtenOpRecord r{fn.name(), t_state.id, c->depth, c->start_ns, end, std::move(c->shapes)};
  std::lock_guard<std::mutex> lock(s->mu);
  s->records.push_back(std::move(r));
}

}  // namespace

AtenOpRecorder::AtenOpRecorder(bool with_shapes) {
  PROTWIN_CHECK(g_sink == nullptr, "AtenOpRecorder: another recorder is alive");
  g_sink = new Sink;
  g_sink->t0 = Clock::now();
  g_sink->with_shapes = with_shapes;
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                      .needsInputs(with_shapes)
                                      .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

AtenOpRecorder::~AtenOpRecorder() {
  at::removeCallback(handle_);
  Sink* s = g_sink;
  g_sink = nullptr;
  delete s;
}

std::vector<AtenOpRecord> AtenOpRecorder::take() {
  std::lock_guard<std::mutex> lock(g_sink->mu);
  return std::move(g_sink->records);
}

std::string plan_op_scope(int op_id) { return "plan_op:" + std::to_string(op_id); }

int plan_op_of_scope(const std::string& name) {
  static const std::string kPrefix = "plan_op:";
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  try {
    return std::stoi(name.substr(kPrefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace protwin::rt
