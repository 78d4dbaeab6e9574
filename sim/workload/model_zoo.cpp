// The zoo: the embedded models/*.json, parsed once, looked up by name.
#include <algorithm>
#include <map>

#include "sim/workload/model_spec.h"
#include "sim/workload/zoo_data.h"
#include "traces/error.h"
#include "traces/json_reader.h"

namespace protwin::sim {

namespace {

struct Zoo {
  std::vector<ModelSpec> models;  // listing order: family (GPT, OPT, LLaMA), then size
};

const Zoo& zoo() {
  static const Zoo z = [] {
    Zoo out;
    for (const auto& f : embedded_model_files()) {
      const std::string file = std::string(f.name) + ".json";
      const std::string where = "sim/workload/models/" + file;
      const auto doc = traces::JsonDocument::parse(f.text, where);
      ModelSpec m = model_from_json(doc.json(), where);
      // A zoo file is named after its model, so the listing and the files agree.
      PROTWIN_ASSERT(m.name + ".json" == file, where, ": name \"", m.name, "\" does not match the file name");
      m.source = "zoo";
      out.models.push_back(std::move(m));
    }
    const std::map<std::string, int> family_rank = {{"gpt2", 0}, {"opt", 1}, {"llama", 2}};
    std::stable_sort(out.models.begin(), out.models.end(), [&](const ModelSpec& a, const ModelSpec& b) {
      const int fa = family_rank.at(a.family), fb = family_rank.at(b.family);
      if (fa != fb) return fa < fb;
      const int64_t pa = a.parameter_count(), pb = b.parameter_count();
      return pa != pb ? pa < pb : a.name < b.name;
    });
    return out;
  }();
  return z;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& m : zoo().models) names.push_back(m.name);
  return names;
}

ModelSpec find_model(const std::string& name) {
  for (const auto& m : zoo().models)
    if (m.name == name) return m;
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown model '" + name + "'; known models: " + known);
}

}  // namespace protwin::sim
