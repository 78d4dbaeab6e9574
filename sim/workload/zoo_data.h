// The zoo's JSON files (sim/workload/models/*.json), compiled in by sim/workload/CMakeLists.txt
// so that `protwin` works from any folder.
#pragma once

#include <vector>

#include "traces/embedded_files.h"

namespace protwin::sim {

const std::vector<traces::EmbeddedFile>& embedded_model_files();

}  // namespace protwin::sim
