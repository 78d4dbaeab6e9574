// The plan's streams on a CUDA GPU: one c10::cuda::CUDAStream per device stream (compute, h2d,
// d2h, ...; pool streams, never the legacy default stream, so nothing synchronizes implicitly)
// and the host for CPU streams (cpu_optim: its ops run on the executor's worker thread).
// Dependencies become CUDA events: every device op records an end event on its stream; a device
// op waits for a dependency on another device stream with cudaStreamWaitEvent (no host stall), a
// host op synchronizes on its device dependencies' end events. Ops are timed by start/end events
// (timing enabled) against one base event per iteration.
// CUDA build only (PROTWIN_WITH_CUDA). Runtime header: includes ATen and c10/cuda.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::rt {

class CudaStreams {
 public:
  // `plan` must outlive this. A stream is a host stream when any of its ops is adam_cpu, host_cast or host_pass.
  explicit CudaStreams(const traces::Plan& plan);

  // The CUDA stream of plan stream `name`-of-op; empty for a host stream.
  std::optional<c10::cuda::CUDAStream> stream_of(const traces::Op& op) const;
  // The CUDA stream of plan stream `name` (compute, h2d, d2h); asserts it is a device stream.
  c10::cuda::CUDAStream stream(const std::string& name) const;

  // Before the executor runs: records the base event on every device stream's timeline.
  void begin_iteration();
  // Called by the op's worker before the op's work: waits for the deps (device waits or host
  // synchronization) and records the op's start event. The worker must have made the op's stream
  // current (CUDAStreamGuard) for device ops.
  void before(const traces::Op& op);
  // After the op's work is enqueued: records its end event.
  void after(const traces::Op& op);
  // Waits for every device stream, then rewrites the device ops' start/end in `report` from the
  // events (ns since the base event) and recomputes per-stream busy time and the iteration time.
  // Host ops keep the executor's steady_clock times, which start when begin_iteration() ended.
  void finish_iteration(traces::Report& report);

 private:
  bool on_device(int op_id) const { return stream_index_[static_cast<size_t>(op_id)] >= 0; }

  const traces::Plan& plan_;
  std::vector<std::optional<c10::cuda::CUDAStream>> streams_;  // per plan stream
  std::vector<int> stream_index_;                              // per op: plan stream, -1 host
  std::vector<at::cuda::CUDAEvent> start_, end_;               // per op
  at::cuda::CUDAEvent base_;
};

}  // namespace protwin::rt
