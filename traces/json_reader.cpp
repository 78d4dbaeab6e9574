#include "traces/json_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "traces/error.h"
#include "traces/file_io.h"

namespace protwin::traces {

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

namespace {
// Appends v's JSON text to `out`, stopping once `out` passes `budget` bytes: each level adds at
// least one byte, so neither the recursion nor the text grows with the value's size.
void brief_dump(const nlohmann::json& v, std::string& out, size_t budget) {
  if (out.size() > budget) return;
  if (v.is_object() || v.is_array()) {
    out += v.is_object() ? '{' : '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= budget; ++it) {
      if (!first) out += ',';
      first = false;
      if (v.is_object()) out += nlohmann::json(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ":";
      brief_dump(*it, out, budget);
    }
    out += v.is_object() ? '}' : ']';
    return;
  }
  out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

std::string describe_json(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  std::string s;
  brief_dump(v, s, 40);
  if (s.size() > 40) s = utf8_prefix(s, 37) + "...";
  return std::string(json_type_name(v)) + " " + s;
}

namespace {
// Builds the document like nlohmann::json::parse, and also refuses what that parser accepts
// silently or cannot survive: a key twice in one object (it would keep the last) and nesting
// deeper than kMaxJsonDepth (readers, dump() and error messages recurse). Both errors name the
// JSON pointer of the object or array.
class CheckedSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;
  CheckedSax(json& root, const std::string& name) : dom_(root, true), name_(name) {}

  bool null() override { return scalar(dom_.null()); }
  bool boolean(bool v) override { return scalar(dom_.boolean(v)); }
  bool number_integer(number_integer_t v) override { return scalar(dom_.number_integer(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(dom_.number_unsigned(v)); }
  bool number_float(number_float_t v, const string_t& s) override { return scalar(dom_.number_float(v, s)); }
  bool string(string_t& v) override { return scalar(dom_.string(v)); }
  bool binary(binary_t& v) override { return scalar(dom_.binary(v)); }
  bool start_object(std::size_t n) override { open(true); return dom_.start_object(n); }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (f.keys.size() < 16 ? std::find(f.keys.begin(), f.keys.end(), k) != f.keys.end() : f.big.count(k) > 0)
      throw Error(name_ + ":" + pointer(frames_.size()) + ": duplicate key \"" + utf8_prefix(k, 60) + "\"");
    if (f.keys.size() < 16) {
      f.keys.push_back(k);
      if (f.keys.size() == 16) f.big.insert(f.keys.begin(), f.keys.end());
    } else {
      f.big.insert(k);
    }
    f.key = k;
    return dom_.key(k);
  }
  bool end_object() override { return close(dom_.end_object()); }
  bool start_array(std::size_t n) override { open(false); return dom_.start_array(n); }
  bool end_array() override { return close(dom_.end_array()); }
  // Syntax errors stop the parse; JsonDocument::parse turns them into line:column.
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    error_byte = pos;
    error_id = e.id;
    error_what = e.what();
    return false;
  }

  size_t error_byte = 0;
  int error_id = 0;
  std::string error_what;

 private:
  struct Frame {
    bool object = false;
    size_t index = 0;               // arrays: the element being read
    std::string key;                // objects: the member being read
    std::vector<std::string> keys;  // the first 16 keys (linear search is fastest for small objects)
    std::unordered_set<std::string> big;
  };
  // The pointer of frame `depth - 1` (the container being read), at most 12 tokens.
  std::string pointer(size_t depth) const {
    std::string p;
    for (size_t i = 0; i + 1 < depth; ++i) {
      if (i == 12) return p + "/...";
      p += "/" + (frames_[i].object ? pointer_token(frames_[i].key) : std::to_string(frames_[i].index));
    }
    return p.empty() ? "/" : p;
  }
  void open(bool object) {
    frames_.emplace_back();
    frames_.back().object = object;
    if (frames_.size() > kMaxJsonDepth)
      throw Error(name_ + ":" + pointer(frames_.size()) + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels");
  }
  bool close(bool ok) {
    frames_.pop_back();
    return scalar(ok);
  }
  bool scalar(bool ok) {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return ok;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& name_;
  std::vector<Frame> frames_;
};
}  // namespace

std::string utf8_prefix(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  // Back up over continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

const char* json_type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}

std::string JsonNode::where() const { return *file_ + ":" + (pointer_.empty() ? "/" : pointer_); }

void JsonNode::fail(const std::string& what) const { throw Error(where() + ": " + what); }

bool JsonNode::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonNode JsonNode::at(const std::string& key) const {
  if (!value_->is_object()) fail("expected an object, got " + describe_json(*value_));
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing required field \"" + key + "\"");
  return JsonNode(&*it, file_, pointer_ + "/" + pointer_token(key));
}

std::optional<JsonNode> JsonNode::find(const std::string& key) const {
  if (!value_->is_object()) fail("expected an object, got " + describe_json(*value_));
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonNode(&*it, file_, pointer_ + "/" + pointer_token(key));
}

size_t JsonNode::size() const {
  if (!value_->is_array()) fail("expected an array, got " + describe_json(*value_));
  return value_->size();
}

JsonNode JsonNode::at(size_t index) const {
  if (index >= size()) fail("index " + std::to_string(index) + " out of range");
  return JsonNode(&(*value_)[index], file_, pointer_ + "/" + std::to_string(index));
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe_json(*value_));
  return value_->get<std::string>();
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + describe_json(*value_));
  const double v = value_->get<double>();
  // 1e400 parses as inf; edited documents (--set) may hold inf or nan.
  if (!std::isfinite(v)) fail(std::string("expected a finite number, got ") + (v != v ? "nan" : v > 0 ? "inf" : "-inf"));
  return v;
}

void JsonNode::check_keys(const std::set<std::string>& allowed) const {
  if (!value_->is_object()) fail("expected an object, got " + describe_json(*value_));
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (allowed.count(it.key())) continue;
    std::string known;
    for (const auto& k : allowed) known += (known.empty() ? "" : ", ") + k;
    fail("unknown field \"" + it.key() + "\" (known: " + known + ")");
  }
}

void JsonNode::check_format(const char* format, int64_t version, const std::string& what,
                            const std::string& hint) const {
  const std::string got = get_string("format");
  if (got != format) at("format").fail("expected \"" + std::string(format) + "\", got \"" + got + "\"");
  const int64_t v = get_int("version");
  if (v != version)
    at("version").fail("unsupported " + what + " version " + std::to_string(v) + " (this protwin reads version " +
                       std::to_string(version) + ")" + hint);
}

int64_t JsonNode::as_int() const {
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail("expected an integer below 2^63, got " + describe_json(*value_));
  if (value_->is_number_integer()) return value_->get<int64_t>();
  if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  fail("expected an integer, got " + describe_json(*value_));
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe_json(*value_));
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

double JsonNode::get_positive_number(const std::string& key) const {
  JsonNode n = at(key);
  const double v = n.as_number();
  if (!(v > 0)) n.fail("expected a number > 0, got " + describe_json(n.raw()));
  return v;
}

int64_t JsonNode::get_int(const std::string& key, int64_t fallback) const {
  auto n = find(key);
  return n ? n->as_int() : fallback;
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
  if (!(v >= lo)) n.fail("expected a number >= " + number_text(lo) + ", got " + describe_json(n.raw()));
  if (!(v <= hi)) n.fail("expected a number <= " + number_text(hi) + ", got " + describe_json(n.raw()));
  return v;
}

int64_t JsonNode::get_int_in(const std::string& key, int64_t lo, int64_t hi) const {
  JsonNode n = at(key);
  const int64_t v = n.as_int();
  if (v < lo) n.fail("expected an integer >= " + std::to_string(lo) + ", got " + describe_json(n.raw()));
  if (v > hi) n.fail("expected an integer <= " + std::to_string(hi) + ", got " + describe_json(n.raw()));
  return v;
}

bool JsonNode::get_bool(const std::string& key, bool fallback) const {
  auto n = find(key);
  return n ? n->as_bool() : fallback;
}

JsonDocument JsonDocument::parse(const std::string& text, const std::string& name) {
  JsonDocument doc;
  doc.name_ = std::make_shared<const std::string>(name);
  auto json = std::make_shared<nlohmann::json>();
  CheckedSax sax(*json, name);
  if (!nlohmann::json::sax_parse(text, &sax)) {
    if (sax.error_id == 406) {  // out_of_range: a number past double, e.g. 1e400
      const std::string& what = sax.error_what;
      const size_t cut = what.find("] ");
      throw Error(name + ": malformed JSON: " + what.substr(cut == std::string::npos ? 0 : cut + 2));
    }
    // Turn the byte offset into line:column, which editors understand.
    size_t line = 1, col = 1;
    const size_t end = std::min(sax.error_byte == 0 ? 0 : sax.error_byte - 1, text.size());
    for (size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    throw Error(name + ": malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(col));
  }
  doc.json_ = std::move(json);
  return doc;
}

JsonDocument JsonDocument::load(const std::string& path) { return parse(read_file(path), path); }

}  // namespace protwin::traces
