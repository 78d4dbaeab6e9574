// Tiny helpers to write test plans and rate files inline.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hwmodels/rate_cost_model.h"
#include "traces/plan.h"

namespace protwin::sim::test {

inline traces::Plan plan_with_streams(const std::vector<std::string>& streams) {
  traces::Plan p;
  for (const auto& s : streams) p.streams.push_back({s, {}});
  return p;
}

// Appends an op and returns its id.
inline int add_op(traces::Plan& p, const std::string& kind, const std::string& stream,
                  std::vector<int> deps = {}, double flops = 0, int64_t bytes = 0) {
  traces::Op op;
  op.id = static_cast<int>(p.ops.size());
  op.kind = traces::op_kind_named(kind);
  op.stream = stream;
  op.deps = std::move(deps);
  op.work.flops = flops;
  op.work.bytes = bytes;
  p.ops.push_back(op);
  return op.id;
}

inline hw::RateCostModel rates(const std::string& text) {
  return hw::RateCostModel::from_json(nlohmann::json::parse(text), "rates.json");
}

}  // namespace protwin::sim::test
