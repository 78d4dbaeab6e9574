// Editing machine documents: what-if overrides (`--set host_link.h2d.pinned_GBps=32`) and folding
// a measured fragment (e.g. the GPU probe's output) into a machine (`protwin machine merge`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::hw {

// `s` split on `sep`, empty pieces kept ("1,,2" and "1," have one, for the caller to refuse).
std::vector<std::string> pieces(const std::string& s, char sep);
// True when `prefix` is `pointer` or one of its ancestors ("/a" covers "/a/b", not "/ab").
bool covers(const std::string& prefix, const std::string& pointer);

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
