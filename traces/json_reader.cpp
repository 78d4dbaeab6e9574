#include "traces/json_reader.h"

#include <cmath>
#include <sstream>

#include "traces/error.h"
#include "traces/file_io.h"

namespace protwin::traces {

namespace {
// JSON Pointer escaping (RFC 6901): '~' -> "~0", '/' -> "~1".
std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string describe(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return std::string(json_type_name(v)) + " " + s;
}
}  // namespace

const char* json_type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}

std::string JsonNode::where() const { return *file_ + ":" + (pointer_.empty() ? "/" : pointer_); }

void JsonNode::fail(const std::string& what) const { throw Error(where() + ": " + what); }

bool JsonNode::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key) && !(*value_)[key].is_null();
}

JsonNode JsonNode::at(const std::string& key) const {
  if (!value_->is_object()) fail("expected an object, got " + describe(*value_));
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing required field \"" + key + "\"");
  return JsonNode(&*it, file_, pointer_ + "/" + escape_token(key));
}

std::optional<JsonNode> JsonNode::find(const std::string& key) const {
  if (!value_->is_object()) fail("expected an object, got " + describe(*value_));
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonNode(&*it, file_, pointer_ + "/" + escape_token(key));
}

size_t JsonNode::size() const {
  if (!value_->is_array()) fail("expected an array, got " + describe(*value_));
  return value_->size();
}

JsonNode JsonNode::at(size_t index) const {
  if (index >= size()) fail("index " + std::to_string(index) + " out of range");
  return JsonNode(&(*value_)[index], file_, pointer_ + "/" + std::to_string(index));
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe(*value_));
  return value_->get<std::string>();
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + describe(*value_));
  const double v = value_->get<double>();
  // 1e400 parses as inf; edited documents (--set) may hold inf or nan.
  if (!std::isfinite(v)) fail(std::string("expected a finite number, got ") + (v != v ? "nan" : v > 0 ? "inf" : "-inf"));
  return v;
}

void JsonNode::check_keys(const std::set<std::string>& allowed) const {
  if (!value_->is_object()) fail("expected an object, got " + describe(*value_));
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (allowed.count(it.key())) continue;
    std::string known;
    for (const auto& k : allowed) known += (known.empty() ? "" : ", ") + k;
    fail("unknown field \"" + it.key() + "\" (known: " + known + ")");
  }
}

int64_t JsonNode::as_int() const {
  if (value_->is_number_integer()) return value_->get<int64_t>();
  if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  fail("expected an integer, got " + describe(*value_));
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe(*value_));
  return value_->get<bool>();
}

std::string JsonNode::get_string(const std::string& key, const std::string& fallback) const {
  auto n = find(key);
  return n ? n->as_string() : fallback;
}

double JsonNode::get_number(const std::string& key, double fallback) const {
  auto n = find(key);
  return n ? n->as_number() : fallback;
}

double JsonNode::get_nonneg_number(const std::string& key) const {
  JsonNode n = at(key);
  const double v = n.as_number();
  if (!(v >= 0)) n.fail("expected a number >= 0, got " + describe(n.raw()));
  return v;
}

double JsonNode::get_positive_number(const std::string& key) const {
  JsonNode n = at(key);
  const double v = n.as_number();
  if (!(v > 0)) n.fail("expected a number > 0, got " + describe(n.raw()));
  return v;
}

int64_t JsonNode::get_int(const std::string& key, int64_t fallback) const {
  auto n = find(key);
  return n ? n->as_int() : fallback;
}

int64_t JsonNode::get_nonneg_int(const std::string& key) const {
  JsonNode n = at(key);
  const int64_t v = n.as_int();
  if (v < 0) n.fail("expected an integer >= 0, got " + describe(n.raw()));
  return v;
}

int64_t JsonNode::get_nonneg_int(const std::string& key, int64_t fallback) const {
  return has(key) ? get_nonneg_int(key) : fallback;
}

namespace {
std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

double JsonNode::get_number_in(const std::string& key, double lo, double hi) const {
  JsonNode n = at(key);
  const double v = n.as_number();
  if (!(v >= lo)) n.fail("expected a number >= " + number_text(lo) + ", got " + describe(n.raw()));
  if (!(v <= hi)) n.fail("expected a number <= " + number_text(hi) + ", got " + describe(n.raw()));
  return v;
}

int64_t JsonNode::get_int_in(const std::string& key, int64_t lo, int64_t hi) const {
  JsonNode n = at(key);
  const int64_t v = n.as_int();
  if (v < lo) n.fail("expected an integer >= " + std::to_string(lo) + ", got " + describe(n.raw()));
  if (v > hi) n.fail("expected an integer <= " + std::to_string(hi) + ", got " + describe(n.raw()));
  return v;
}

bool JsonNode::get_bool(const std::string& key, bool fallback) const {
  auto n = find(key);
  return n ? n->as_bool() : fallback;
}

JsonDocument JsonDocument::parse(const std::string& text, const std::string& name) {
  JsonDocument doc;
  doc.name_ = std::make_shared<const std::string>(name);
  try {
    doc.json_ = std::make_shared<const nlohmann::json>(nlohmann::json::parse(text));
  } catch (const nlohmann::json::parse_error& e) {
    // Turn the byte offset into line:column, which editors understand.
    size_t line = 1, col = 1;
    const size_t end = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    for (size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    throw Error(name + ": malformed JSON at line " + std::to_string(line) + ", column " +
                std::to_string(col));
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range 406: a number past double
    const std::string what = e.what();
    throw Error(name + ": malformed JSON: " + what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2));
  }
  return doc;
}

JsonDocument JsonDocument::load(const std::string& path) { return parse(read_file(path), path); }

}  // namespace protwin::traces
