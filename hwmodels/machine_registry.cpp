#include "hwmodels/machine_registry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "hwmodels/machine.h"

namespace protwin::hw {

std::vector<std::string> machine_names() {
  std::vector<std::string> out;
  for (const auto& f : detail::embedded_machines()) out.push_back(f.name);
  std::sort(out.begin(), out.end());
  return out;
}

const char* embedded_machine_json(const std::string& name) {
  for (const auto& f : detail::embedded_machines())
    if (name == f.name) return f.text;
  return nullptr;
}

}  // namespace protwin::hw
