// RateCostModel: per-stream rates read from a small JSON file, for tests and the demo. The
// hardware cost model (machines + curves) is hwmodels/hardware_cost_model.h.
//
// JSON: {"format": "protwin.rates", "version": 1,
//        "links": {"pcie_h2d": {"GBps": 16}, ...},
//        "streams": {"compute": {"tflops": 100, "GBps": 900, "latency_us": 5},
//                    "h2d": {"latency_us": 10, "links": ["pcie_h2d"]}, ...},
//        "default": {"tflops": 1, "GBps": 1, "latency_us": 0}}
// An op's time on a stream without links: latency + flops/tflops + bytes/GBps. On a stream with
// links: latency, then work.bytes over those links (shared max-min fairly with other transfers).
#pragma once

#include <string>
#include <unordered_map>
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
  std::unordered_map<std::string, StreamRate> streams_;
  StreamRate default_;
};

}  // namespace protwin::hw
