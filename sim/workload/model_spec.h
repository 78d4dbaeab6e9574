// The simulator's names for the one model description (traces/model_spec.h) and its parameter
// layout (traces/parameter_layout.h), and where a model comes from: the zoo
// (sim/workload/models/*.json, embedded into the binary), a spec file, or an inline spec
// ("gpt:hidden=1024,layers=24,...").
#pragma once

#include <string>
#include <vector>

#include "traces/model_spec.h"
#include "traces/parameter_layout.h"

namespace protwin::sim {

using traces::BlockParams;
using traces::ModelSpec;
using traces::ParamTensor;
using traces::model_from_json;
using traces::model_to_json;
using traces::parameter_layout;

// Zoo names in a stable order.
std::vector<std::string> model_names();
// A zoo model by name; an unknown name is a user error listing the known ones.
ModelSpec find_model(const std::string& name);
// A zoo name, a path to a spec JSON file, or an inline spec "family:key=value,...".
ModelSpec resolve_model(const std::string& name_file_or_inline);

}  // namespace protwin::sim
