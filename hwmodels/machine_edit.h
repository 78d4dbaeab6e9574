// Editing machine documents: what-if overrides (`--set host_link.h2d.pinned_GBps=32`) and folding
// a measured fragment (e.g. the GPU probe's output) into a machine (`protwin machine merge`).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace protwin::hw {

// Applies "dotted.path=value" to a machine document. Path tokens name object keys or array
// indices; the target must already exist and hold a number (the value must be a finite number),
// a boolean (true or false) or a string (any text; names and enumerations such as
// collectives.intra_node.fabric are checked when the machine is read). The overridden value's
// provenance becomes {"kind": "assumed", "source": "--set <assignment>"}. Errors start with
// "--set <path>:" and name the nearest valid keys.
void apply_override(nlohmann::json& machine_json, const std::string& assignment);

// Deep-merges `fragment` into `base`: objects merge key by key, everything else (numbers, strings,
// arrays such as curves) is replaced; the fragment's top-level "format", "version", "generator"
// and "raw" (protwin-probe's header and measurements) are not merged. For every replaced value, base provenance entries at or
// below its pointer are dropped and the fragment's entries are copied in; `fragment_source` names
// the fragment in errors. Returns the merged document (not validated; see machine_from_json).
nlohmann::json merge_machine_json(const nlohmann::json& base, const nlohmann::json& fragment,
                                  const std::string& fragment_source);

}  // namespace protwin::hw
