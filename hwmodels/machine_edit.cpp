#include "hwmodels/machine_edit.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <boost/algorithm/string/split.hpp>

#include "traces/error.h"
#include "traces/json_reader.h"

namespace protwin::hw {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Up to three keys of `obj` closest to `key`, comma separated.
std::string nearest_keys(const nlohmann::json& obj, const std::string& key) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (it.key() != "provenance") scored.push_back({edit_distance(key, it.key()), it.key()});
  std::sort(scored.begin(), scored.end());
  std::string out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out += (i ? ", " : "") + scored[i].second;
  return out;
}

void merge_into(nlohmann::json& base, const nlohmann::json& frag, const std::string& pointer,
                bool top, std::vector<std::string>& replaced) {
  for (auto it = frag.begin(); it != frag.end(); ++it) {
    // A fragment's own header and measurements (protwin-probe writes "generator" and "raw") are
    // not machine fields.
    if (top && (it.key() == "format" || it.key() == "version" || it.key() == "provenance" ||
                it.key() == "generator" || it.key() == "raw"))
      continue;
    const std::string p = pointer + "/" + traces::pointer_token(it.key());
    if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object()) {
      merge_into(base[it.key()], it.value(), p, false, replaced);
    } else {
      base[it.key()] = it.value();
      replaced.push_back(p);
    }
  }
}

}  // namespace

std::vector<std::string> pieces(const std::string& s, char sep) {
  std::vector<std::string> out;
  return boost::algorithm::split(out, s, [sep](char c) { return c == sep; });
}

bool covers(const std::string& prefix, const std::string& pointer) {
  if (pointer.compare(0, prefix.size(), prefix) != 0) return false;
  return pointer.size() == prefix.size() || pointer[prefix.size()] == '/';
}

void apply_override(nlohmann::json& machine_json, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  PROTWIN_CHECK(eq != std::string::npos && eq > 0, "--set ", assignment,
                ": expected path=value, e.g. host_link.h2d.pinned_GBps=32");
  const std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  nlohmann::json* node = &machine_json;
  std::string walked, pointer;
  for (const std::string& token : pieces(path, '.')) {
    const std::string where = walked.empty() ? std::string("the machine") : walked;
    if (node->is_object()) {
      PROTWIN_CHECK(token != "provenance" && node->contains(token), "--set ", path, ": no field \"",
                    token, "\" in ", where, "; nearest: ", nearest_keys(*node, token));
      node = &(*node)[token];
    } else if (node->is_array()) {
      char* end = nullptr;
      errno = 0;
      const long idx = std::strtol(token.c_str(), &end, 10);
      PROTWIN_CHECK(!token.empty() && *end == '\0' && errno == 0 && idx >= 0 &&
                        static_cast<size_t>(idx) < node->size(),
                    "--set ", path, ": ", where, " is an array of ", node->size(),
                    " values; expected an index 0..", node->size() == 0 ? 0 : node->size() - 1,
                    ", got \"", token, "\"");
      node = &(*node)[static_cast<size_t>(idx)];
    } else {
      PROTWIN_CHECK(false, "--set ", path, ": ", where, " is a value, it has no field \"", token,
                    "\"");
    }
    walked += (walked.empty() ? "" : ".") + token;
    pointer += "/" + traces::pointer_token(token);
  }
  if (node->is_boolean()) {
    PROTWIN_CHECK(value == "true" || value == "false", "--set ", path,
                  ": expected true or false, got \"", value, "\"");
    *node = value == "true";
  } else if (node->is_string()) {
    *node = value;  // names and enumerations (fabric): the machine's validation checks them
  } else {
    PROTWIN_CHECK(node->is_number(), "--set ", path, ": is ",
                  node->is_object() ? "an object; set one of its fields: " + nearest_keys(*node, "")
                  : node->is_array() && !node->empty()
                      ? "an array of " + std::to_string(node->size()) + " values; set one of them: " + path +
                            ".0 .. " + path + "." + std::to_string(node->size() - 1)
                      : std::string("neither a number, a boolean nor a string"),
                  "");
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(value.c_str(), &end);
    PROTWIN_CHECK(!value.empty() && *end == '\0' && errno == 0, "--set ", path,
                  ": expected a number, got \"", value, "\"");
    PROTWIN_CHECK(std::isfinite(v), "--set ", path, ": expected a finite number, got \"", value, "\"");
    if (node->is_number_integer() && std::abs(v) < 9e18 && v == static_cast<double>(static_cast<int64_t>(v)))
      *node = static_cast<int64_t>(v);
    else
      *node = v;
  }
  // A what-if value is no longer what the source measured.
  nlohmann::json& prov = machine_json["provenance"];
  if (!prov.is_object()) prov = nlohmann::json::object();
  for (auto it = prov.begin(); it != prov.end();) {
    if (covers(pointer, it.key()) && it.key() != pointer) it = prov.erase(it);
    else ++it;
  }
  prov[pointer] = {{"kind", "assumed"}, {"source", "--set " + assignment}};
}

nlohmann::json merge_machine_json(const nlohmann::json& base, const nlohmann::json& fragment,
                                  const std::string& fragment_source) {
  PROTWIN_CHECK(fragment.is_object(), fragment_source, ":/: expected a machine fragment object");
  nlohmann::json out = base;
  std::vector<std::string> replaced;
  merge_into(out, fragment, "", true, replaced);
  const nlohmann::json frag_prov =
      fragment.contains("provenance") ? fragment["provenance"] : nlohmann::json::object();
  PROTWIN_CHECK(frag_prov.is_object(), fragment_source,
                ":/provenance: expected an object of JSON pointer -> {kind, source}");
  for (const std::string& p : replaced) {
    bool covered = false;
    for (auto it = frag_prov.begin(); it != frag_prov.end(); ++it)
      covered = covered || covers(it.key(), p) || covers(p, it.key());
    PROTWIN_CHECK(covered, fragment_source, ":", p,
                  ": merged value has no provenance entry in the fragment");
  }
  nlohmann::json& prov = out["provenance"];
  if (!prov.is_object()) prov = nlohmann::json::object();
  for (auto it = prov.begin(); it != prov.end();) {
    bool drop = false;
    for (const std::string& p : replaced) drop = drop || covers(p, it.key());
    if (drop) it = prov.erase(it);
    else ++it;
  }
  for (auto it = frag_prov.begin(); it != frag_prov.end(); ++it) prov[it.key()] = it.value();
  return out;
}

}  // namespace protwin::hw
