#include "runtime/cuda/cuda_streams.h"

#include <algorithm>

#include <c10/cuda/CUDAFunctions.h>

#include "traces/error.h"

namespace protwin::rt {

namespace {
// Timing-enabled events (CUDAEvent's default flags disable timing).
constexpr unsigned int kTimedEvent = cudaEventDefault;
int64_t ms_to_ns(float ms) { return static_cast<int64_t>(static_cast<double>(ms) * 1e6); }
}  // namespace

CudaStreams::CudaStreams(const traces::Plan& plan) : plan_(plan), base_(kTimedEvent) {
  std::vector<bool> host(plan.streams.size(), false);
  for (const traces::Op& op : plan.ops)
    if (op.kind == traces::OpKind::kAdamCpu || op.kind == traces::OpKind::kHostCast || op.kind == traces::OpKind::kHostPass) host[static_cast<size_t>(plan.stream_index(op.stream))] = true;
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    if (host[s]) {
      streams_.emplace_back(std::nullopt);
    } else {
      // Copy streams get high priority so a prefetch is not queued behind compute kernels.
      const bool copy = plan.streams[s].name == "h2d" || plan.streams[s].name == "d2h";
      streams_.emplace_back(c10::cuda::getStreamFromPool(copy));
    }
  }
  for (const traces::Op& op : plan.ops) {
    const int s = plan.stream_index(op.stream);
    PROTWIN_ASSERT(s >= 0, traces::describe_op(op), ": unknown stream (plan not validated?)");
    stream_index_.push_back(streams_[static_cast<size_t>(s)] ? s : -1);
    start_.emplace_back(kTimedEvent);
    end_.emplace_back(kTimedEvent);
  }
}

std::optional<c10::cuda::CUDAStream> CudaStreams::stream_of(const traces::Op& op) const {
  const int s = stream_index_[static_cast<size_t>(op.id)];
  if (s < 0) return std::nullopt;
  return streams_[static_cast<size_t>(s)];
}

c10::cuda::CUDAStream CudaStreams::stream(const std::string& name) const {
  for (size_t s = 0; s < plan_.streams.size(); ++s)
    if (plan_.streams[s].name == name && streams_[s]) return *streams_[s];
  throw Error(detail::concat("internal error: the plan has no device stream \"", name, "\""), ErrorKind::kInternal);
}

void CudaStreams::begin_iteration() {
  // Every device stream starts after the previous iteration and after the base event.
  for (const auto& s : streams_)
    if (s) s->synchronize();
  base_.record(stream("compute"));
  base_.synchronize();
}

void CudaStreams::before(const traces::Op& op) {
  const std::optional<c10::cuda::CUDAStream> mine = stream_of(op);
  for (int d : op.deps) {
    if (!on_device(d)) continue;  // a host op is complete when the executor marks it done
    if (!mine) {
      end_[static_cast<size_t>(d)].synchronize();
    } else if (stream_index_[static_cast<size_t>(d)] != stream_index_[static_cast<size_t>(op.id)]) {
      end_[static_cast<size_t>(d)].block(*mine);
    }  // same stream: ordered by the stream itself
  }
  if (mine) start_[static_cast<size_t>(op.id)].record(*mine);
}

void CudaStreams::after(const traces::Op& op) {
  const std::optional<c10::cuda::CUDAStream> mine = stream_of(op);
  if (mine) end_[static_cast<size_t>(op.id)].record(*mine);
}

void CudaStreams::finish_iteration(traces::Report& report) {
  for (const auto& s : streams_)
    if (s) s->synchronize();
  for (traces::OpRecord& r : report.ops) {
    if (!on_device(r.id)) continue;
    r.start = SimTime(ms_to_ns(base_.elapsed_time(start_[static_cast<size_t>(r.id)])));
    r.end = SimTime(ms_to_ns(base_.elapsed_time(end_[static_cast<size_t>(r.id)])));
  }
  int64_t iteration = 0;
  std::vector<int64_t> busy(plan_.streams.size(), 0);
  for (const traces::OpRecord& r : report.ops) {
    iteration = std::max(iteration, r.end.ns);
    const int s = plan_.stream_index(r.stream);
    if (s >= 0) busy[static_cast<size_t>(s)] += r.end.ns - r.start.ns;
  }
  report.iteration = SimTime(iteration);
  for (traces::StreamRecord& sr : report.streams) {
    const int s = plan_.stream_index(sr.name);
    if (s >= 0) sr.busy = SimTime(busy[static_cast<size_t>(s)]);
  }
}

}  // namespace protwin::rt
