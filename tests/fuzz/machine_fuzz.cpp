// Fuzz target: a machine file with what-if overrides, as `--machine F --set k=v` reads it. The
// input's leading lines that start with "--set " are the overrides; the rest is the JSON.
#include "fuzz_target.h"
#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "hwmodels/machine_edit.h"
#include "traces/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    using namespace protwin;
    std::vector<std::string> sets;
    size_t pos = 0;
    while (text.compare(pos, 6, "--set ") == 0) {
      const size_t nl = text.find('\n', pos);
      const size_t end = nl == std::string::npos ? text.size() : nl;
      sets.push_back(text.substr(pos + 6, end - pos - 6));
      pos = nl == std::string::npos ? text.size() : nl + 1;
    }
    nlohmann::json j = traces::JsonDocument::parse(text.substr(pos), "fuzz.machine.json").json();
    for (const auto& s : sets) hw::apply_override(j, s);
    hw::HardwareCostModel cost(hw::machine_from_json(j, "fuzz.machine.json"));
  });
}
