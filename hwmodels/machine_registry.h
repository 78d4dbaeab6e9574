// The machines compiled in at build time (hwmodels/machines/*.json, by hwmodels/machines.cmake).
#pragma once

#include <vector>

#include "traces/embedded_files.h"

namespace protwin::hw::detail {

const std::vector<traces::EmbeddedFile>& embedded_machines();

}  // namespace protwin::hw::detail
