// RateCostModel: per-stream rates read from a small JSON file, for tests and the demo. The
// hardware cost model (machines + curves) is hwmodels/hardware_cost_model.h.
//
// JSON: {"format": "protwin.rates", "version": 1,
//        "links": {"pcie_h2d": {"GBps": 16}, ...},
//        "streams": {"compute": {"tflops": 100, "GBps": 900, "latency_us": 5},
//                    "h2d": {"latency_us": 10, "links": ["pcie_h2d"]}, ...},
//        "default": {"tflops": 1, "GBps": 1, "latency_us": 0}}
// An op's time on a stream without links: latency + flops/tflops + bytes/GBps. On a stream with
// links: latency, then work.bytes over those links (shared max-min fairly with other transfers),
// each transfer capped at the stream's max_GBps (0 = no cap). Times round up to whole ns.
// Unknown fields are errors ("note" is allowed everywhere, "provenance" at the top). Rates are 0
// or from 1e-6 to 1e9 (GB/s, TFLOPS), latencies from 0 to 1e9 us; an op that would take longer
// than the simulator's horizon (2^62 ns) is an error naming the op and the rates. "format" and
// "version" may be omitted (rates embedded in a plan's meta.rates); when given they must match.
// Streams not listed use "default"; without one, unit rates (1 TFLOPS, 1 GB/s, no latency), so
// an empty object is valid "built-in unit rates".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/cost_model.h"

namespace protwin::hw {

struct StreamRate {
  double tflops = 0;      // 0 = flops cost nothing
  double GBps = 0;        // 0 = bytes cost nothing (on a stream without links)
  double latency_us = 0;
  std::vector<int> links; // indices into links_
  double max_GBps = 0;    // per-transfer cap on link streams (0 = none)
};

class RateCostModel : public CostModel {
 public:
  static RateCostModel from_json(const nlohmann::json& j, const std::string& source);
  static RateCostModel load(const std::string& path);

  std::vector<LinkSpec> links() const override { return links_; }
  OpCost cost(const traces::Op& op, const traces::Plan& plan) const override;

 private:
  std::vector<LinkSpec> links_;
  std::string source_;  // the rates file (or "plan.json:/meta/rates"), for errors
  const StreamRate& rate_of(const std::string& stream) const;

  // By name, in name order; plans have a handful of streams, so a scan beats hashing.
  std::vector<std::pair<std::string, StreamRate>> streams_;
  StreamRate default_;
  // A document that lists streams but has no "default" prices only those: any other stream is an
  // error naming the file, never a silent unit rate. (No streams at all: unit rates everywhere.)
  bool unlisted_is_error_ = false;
};

}  // namespace protwin::hw
