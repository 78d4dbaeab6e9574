// The CostModel interface: how long an op of a Plan takes on a machine (DESIGN §5).
//
// The simulator asks once per op, before simulating. An op's cost is a short list of phases, each
// on one resource, run in order: its host thread issuing it, then its stream busy for a time (a
// GPU stream's latency, launch and compute, or CPU work), then a transfer over one or more shared
// links. The transfer's time depends on what else is on those links at the time, which only the
// simulator knows.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "traces/error.h"
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

// The resource a phase runs on (in this order within an op).
enum class PhaseOn : uint8_t {
  kHost,    // the rank's host thread issues the op (DESIGN §4.1: dispatch, hooks, the CUDA/NCCL call)
  kDevice,  // the op's stream, not shared: latency, launch, compute
  kCpu,     // the op's stream, as CPU work (CPU Adam, host passes): a launch that depends on the
            // op waits for its end
  kLinks,   // bytes flowing over every listed link at once, shared max-min fairly
};

struct Phase {
  static constexpr int kMaxLinks = 3;
  PhaseOn on = PhaseOn::kDevice;
  bool until_end = false;                        // kHost: the host stays blocked until the op ends
  std::array<int, kMaxLinks> links{-1, -1, -1};  // kLinks: indices into CostModel::links(); -1 = unused
  SimTime time;                                  // kHost, kDevice, kCpu
  double bytes = 0;                              // kLinks
  double max_GBps = 0;                           // kLinks: the transfer's own rate cap (0 = none)

  int n_links() const {
    int n = 0;
    while (n < kMaxLinks && links[static_cast<size_t>(n)] >= 0) ++n;
    return n;
  }
};

inline Phase on_host(SimTime t, bool until_end = false) { return {PhaseOn::kHost, until_end, {-1, -1, -1}, t, 0, 0}; }
inline Phase on_device(SimTime t) { return {PhaseOn::kDevice, false, {-1, -1, -1}, t, 0, 0}; }
inline Phase over_links(std::array<int, Phase::kMaxLinks> links, double bytes, double max_GBps) {
  return {PhaseOn::kLinks, false, links, SimTime{}, bytes, max_GBps};
}

// An op's cost: at most one phase per resource, in PhaseOn order; fixed capacity, so pricing an
// op allocates nothing.
struct OpCost {
  static constexpr int kMaxPhases = 3;
  std::array<Phase, kMaxPhases> phases{};
  uint8_t n = 0;
  KernelSource source = KernelSource::kNone;  // what priced the stream's time and the transfer

  OpCost& add(const Phase& p) {
    PROTWIN_ASSERT(n < kMaxPhases, "an op's cost holds at most ", kMaxPhases, " phases");
    phases[n++] = p;
    return *this;
  }
  // The stream's phase (kDevice or kCpu), the host's, the transfer; nullptr when there is none.
  Phase* stream() { return at(index_of(PhaseOn::kDevice, PhaseOn::kCpu)); }
  const Phase* stream() const { return at(index_of(PhaseOn::kDevice, PhaseOn::kCpu)); }
  const Phase* host() const { return at(index_of(PhaseOn::kHost, PhaseOn::kHost)); }
  const Phase* transfer() const { return at(index_of(PhaseOn::kLinks, PhaseOn::kLinks)); }
  SimTime stream_time() const { return stream() ? stream()->time : SimTime{}; }
  SimTime host_time() const { return host() ? host()->time : SimTime{}; }

 private:
  int index_of(PhaseOn a, PhaseOn b) const {
    for (int k = 0; k < n; ++k)
      if (phases[static_cast<size_t>(k)].on == a || phases[static_cast<size_t>(k)].on == b) return k;
    return -1;
  }
  Phase* at(int k) { return k < 0 ? nullptr : &phases[static_cast<size_t>(k)]; }
  const Phase* at(int k) const { return k < 0 ? nullptr : &phases[static_cast<size_t>(k)]; }
};

// Streams that slow each other on hardware no link models (sim/engine/contention.h): an op on
// `stream` does its stream-phase work `slowdown` times slower while any op of `beside` runs.
struct ContentionRule {
  std::string stream;
  std::vector<std::string> beside;
  double slowdown = 1;
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
  // The contention rules the engine applies when given none (PlanSimulator): a measured profile's.
  virtual const std::vector<ContentionRule>& contention() const {
    static const std::vector<ContentionRule> none;
    return none;
  }
};

}  // namespace protwin::hw
