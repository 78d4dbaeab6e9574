// Host-dispatch costs from a PyTorch profiler (Kineto) trace (DESIGN §4, host dispatch): what the
// CPU thread spends issuing GPU work, as a machine-file fragment for `protwin machine merge`.
//
// Read from the trace's host events (µs, medians; pytorch/pytorch#41383 for why the CPU side of
// eager PyTorch bounds small kernels):
//   kernel_launch_us      cudaLaunchKernel calls whose correlation id reaches a GPU kernel
//                         (the cuda_runtime -> kernel link that ac2g flow events draw);
//   copy_call_us          cudaMemcpyAsync calls;
//   eager_op_autograd_us  outermost cpu_ops recorded by autograd (args "Sequence number") that
//                         launch exactly one kernel: their duration minus that launch;
//   eager_op_us           the same for outermost cpu_ops without autograd recording;
//   backward_op_us        the same for the autograd engine's nodes
//                         ("autograd::engine::evaluate_function: ...") that launch one kernel;
//   collective_call_us    outermost c10d:: cpu_ops (the collective's host side).
// A value with no sample in the trace is left out. The trace should be one import_kineto accepted
// (it checks every event); events of other shapes are skipped here.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "traces/json_reader.h"

namespace protwin::traces {

struct HostCostSample {
  int64_t count = 0;
  double median_us = 0;
};

// Keyed by the machine field (kernel_launch_us, ...); only fields with samples.
std::map<std::string, HostCostSample> host_dispatch_costs(const JsonNode& root);

// {"host_dispatch": {field: median_us, ...}, "provenance": {"/host_dispatch/<field>": {"kind":
// "measured", "source": `source`, "note": "median of N ..."}}}.
nlohmann::json host_dispatch_fragment(const std::map<std::string, HostCostSample>& costs, const std::string& source);

}  // namespace protwin::traces
