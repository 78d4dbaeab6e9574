// The 4D estimator's architecture numbers (sim/estimate) from a zoo ModelSpec: shared by
// `protwin estimate`, `estimate-search`, `simulate-4d` and `search-4d`.
#pragma once

#include "sim/estimate/memory_estimate.h"
#include "sim/workload/model_spec.h"

namespace protwin::sim {

EstimateModel to_estimate_model(const ModelSpec& spec);

}  // namespace protwin::sim
