#include "hwmodels/machine_registry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "hwmodels/machine.h"

namespace protwin::hw {

std::vector<std::string> machine_names() {
  std::vector<std::string> out;
  for (size_t i = 0; i < detail::kEmbeddedMachineCount; ++i)
    out.push_back(detail::kEmbeddedMachines[i].name);
  std::sort(out.begin(), out.end());
  return out;
}

const char* embedded_machine_json(const std::string& name) {
  for (size_t i = 0; i < detail::kEmbeddedMachineCount; ++i)
    if (name == detail::kEmbeddedMachines[i].name) return detail::kEmbeddedMachines[i].json;
  return nullptr;
}

}  // namespace protwin::hw
