// The CostModel interface: how long an op of a Plan takes on a machine (DESIGN §5).
//
// The simulator asks once per op, before simulating. An op's time is a fixed part (launch,
// latency, compute) followed by an optional transfer over one or more shared links; the link part
// depends on what else is on those links at the time, which only the simulator knows.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "traces/plan.h"
#include "traces/units.h"

namespace protwin::hw {

// A shared link, e.g. one direction of PCIe, or host DRAM. 1 GB/s = 1 byte/ns.
struct LinkSpec {
  std::string name;
  double GBps = 0;
};

// Where an op's time came from, most trusted first: a measured op profile; a measured kernel table
// (exact, interpolated, extrapolated in the flat regime, or derived from another GPU's); the
// shape-aware model; the machine file's curves and rates; a rates file. kMixed: an op whose kernels came from different sources; kNone:
// an op that costs nothing (alloc, free). The simulating subcommands count ops per source.
enum class KernelSource : uint8_t { kProfile, kMeasured, kInterpolated, kExtrapolated, kDerived, kModel, kCurve, kRates, kMixed, kNone };
const char* kernel_source_name(KernelSource s);

struct OpCost {
  static constexpr int kMaxLinks = 3;
  SimTime fixed;                        // not shared: latency, launch, compute
  std::array<int, kMaxLinks> links{-1, -1, -1};  // indices into CostModel::links(); -1 = unused
  double link_bytes = 0;                // bytes that then flow over every listed link at once
  double max_GBps = 0;                  // the transfer's own rate cap (0 = none)
  // Host dispatch (DESIGN §4): CPU time the rank's host thread spends issuing this op (framework
  // dispatch, hooks, the CUDA/NCCL call); zero = not issued by the host thread. The op starts no
  // earlier than its launch ends.
  SimTime host;
  bool host_sync = false;               // the host blocks until the op ends (.item(), blocking copy)
  bool cpu_work = false;                // runs on the CPU: a launch depending on it waits for it
  KernelSource source = KernelSource::kNone;  // what priced `fixed` and the transfer

  int n_links() const {
    int n = 0;
    while (n < kMaxLinks && links[n] >= 0) ++n;
    return n;
  }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::vector<LinkSpec> links() const { return {}; }
  virtual OpCost cost(const traces::Op& op, const traces::Plan& plan) const = 0;
  // Launches a host thread may have issued that have not finished before its next launch blocks:
  // the CUDA driver's pending-launch queue, commonly measured at about 1024 entries (an
  // undocumented driver limit; machine files set it in host_dispatch.launch_queue_depth).
  virtual int launch_queue_depth() const { return 1024; }
};

}  // namespace protwin::hw
