// Where a ModelSpec comes from: the zoo (the embedded models/*.json, parsed once, looked up by
// name), a spec file, or an inline spec.
#include "sim/workload/model_spec.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "hwmodels/machine_edit.h"
#include "sim/workload/zoo_data.h"
#include "traces/error.h"
#include "traces/json_reader.h"

namespace protwin::sim {

namespace {

using protwin::detail::join;

// Listing order: family (GPT, OPT, LLaMA), then size.
const std::vector<ModelSpec>& zoo() {
  static const std::vector<ModelSpec> z = [] {
    std::vector<ModelSpec> out;
    for (const auto& f : embedded_model_files()) {
      const std::string file = std::string(f.name) + ".json";
      const std::string where = "sim/workload/models/" + file;
      const auto doc = traces::JsonDocument::parse(f.text, where);
      ModelSpec m = model_from_json(doc.json(), where);
      // A zoo file is named after its model, so the listing and the files agree.
      PROTWIN_ASSERT(m.name + ".json" == file, where, ": name \"", m.name, "\" does not match the file name");
      m.source = "zoo";
      out.push_back(std::move(m));
    }
    const std::map<std::string, int> family_rank = {{"gpt2", 0}, {"opt", 1}, {"llama", 2}};
    std::stable_sort(out.begin(), out.end(), [&](const ModelSpec& a, const ModelSpec& b) {
      const int fa = family_rank.at(a.family), fb = family_rank.at(b.family);
      if (fa != fb) return fa < fb;
      const int64_t pa = a.parameter_count(), pb = b.parameter_count();
      return pa != pb ? pa < pb : a.name < b.name;
    });
    return out;
  }();
  return z;
}

// "gpt:hidden=1024,layers=24" -> {"family":"gpt","hidden":1024,"layers":24}. Integers and
// true/false become JSON numbers and booleans; anything else stays a string, so a bad value is
// reported by model_from_json with the key's pointer.
nlohmann::json parse_inline(const std::string& spec, const std::string& where) {
  const std::vector<std::string>& fields = traces::model_fields();
  const size_t colon = spec.find(':');
  nlohmann::json j = nlohmann::json::object();
  j["family"] = spec.substr(0, colon);
  for (const std::string& item : hw::pieces(spec.substr(colon + 1), ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    PROTWIN_CHECK(eq != std::string::npos && eq > 0, where, ": expected key=value, got '", item, "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    PROTWIN_CHECK(key != "family", where, ": the family is given before ':'");
    PROTWIN_CHECK(std::find(fields.begin(), fields.end(), key) != fields.end(), where, ": unknown key '", key,
                  "'; known keys: ", join(fields));
    PROTWIN_CHECK(!j.contains(key), where, ": '", key, "' given twice");  // as JSON's duplicate keys
    const bool digits = !value.empty() &&
                        std::all_of(value.begin() + (value[0] == '-' ? 1 : 0), value.end(),
                                    [](unsigned char c) { return std::isdigit(c); }) &&
                        value != "-" && value.size() < 19;
    if (digits) j[key] = std::stoll(value);
    else if (value == "true") j[key] = true;
    else if (value == "false") j[key] = false;
    else j[key] = value;
  }
  return j;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& m : zoo()) names.push_back(m.name);
  return names;
}

ModelSpec find_model(const std::string& name) {
  for (const auto& m : zoo())
    if (m.name == name) return m;
  throw Error("unknown model '" + name + "'; known models: " + join(model_names()));
}

ModelSpec resolve_model(const std::string& s) {
  const auto names = model_names();
  if (std::find(names.begin(), names.end(), s) != names.end()) return find_model(s);

  const size_t colon = s.find(':');
  if (colon != std::string::npos && s.find('=') != std::string::npos && s.find('/') == std::string::npos) {
    const std::string where = "inline spec '" + s + "'";
    const std::string family = s.substr(0, colon);
    PROTWIN_CHECK(traces::is_family(family), where, ": unknown family '", family,
                  "'; expected gpt, gpt2, opt or llama");
    nlohmann::json j = parse_inline(s, where);
    if (!j.contains("name")) j["name"] = s;
    ModelSpec m = model_from_json(j, where);
    m.source = "inline";
    return m;
  }

  const bool looks_like_path = s.find('/') != std::string::npos ||
                               (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
  if (looks_like_path) {
    const auto doc = traces::JsonDocument::load(s);
    nlohmann::json j = doc.json();
    if (j.is_object() && !j.contains("name")) {
      // Default name: the file's stem.
      std::string stem = s.substr(s.find_last_of('/') == std::string::npos ? 0 : s.find_last_of('/') + 1);
      if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
      j["name"] = stem;
    }
    return model_from_json(j, s);
  }
  throw Error("unknown model '" + s + "'; known models: " + join(names) +
              "\nhint: give a zoo name, a spec JSON file, or an inline spec such as "
              "'gpt:hidden=1024,layers=24,heads=16,vocab=50257'");
}

}  // namespace protwin::sim
