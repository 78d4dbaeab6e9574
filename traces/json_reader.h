// Reading JSON with diagnostics that name the file and the JSON pointer (DESIGN §9).
//
// A JsonNode is a view of one value in a parsed document plus where it is. Every typed getter
// fails with "file:/json/pointer: expected ..., got ...", so readers of Plans, Reports, machines
// and model specs never hand-write an error location.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace protwin::traces {

class JsonNode {
 public:
  JsonNode(const nlohmann::json* value, std::shared_ptr<const std::string> file, std::string pointer)
      : value_(value), file_(std::move(file)), pointer_(std::move(pointer)) {}

  // "file:/pointer" (the pointer is "/" for the root value).
  std::string where() const;
  [[noreturn]] void fail(const std::string& what) const;

  const nlohmann::json& raw() const { return *value_; }
  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_null() const { return value_->is_null(); }

  // Objects.
  // A member that is present is read, even when null: "heads": null is "expected an integer, got
  // null", never a silent default.
  bool has(const std::string& key) const;
  JsonNode at(const std::string& key) const;                   // required member
  std::optional<JsonNode> find(const std::string& key) const;  // optional member

  // Arrays.
  size_t size() const;  // array length; fails if not an array
  JsonNode at(size_t index) const;

  // Scalars.
  std::string as_string() const;
  double as_number() const;
  int64_t as_int() const;  // integral numbers only
  bool as_bool() const;

  // Fails naming the first member that `allowed` does not list (and the allowed ones), so that a
  // typo ("GBPs", "latency_ms") is never silently ignored. Fails if this is not an object.
  void check_keys(const std::set<std::string>& allowed) const;

  // The document's header: "format" must be `format` and "version" `version`, else an error naming
  // the member ("unsupported <what> version N (this protwin reads version V)", then `hint`).
  void check_format(const char* format, int64_t version, const std::string& what,
                    const std::string& hint = "") const;

  // Member shortcuts, with range checks that name the field. Numbers are finite.
  std::string get_string(const std::string& key) const { return at(key).as_string(); }
  std::string get_string(const std::string& key, const std::string& fallback) const;
  double get_number(const std::string& key) const { return at(key).as_number(); }
  double get_number(const std::string& key, double fallback) const;
  double get_number_in(const std::string& key, double lo, double hi) const;  // lo <= v <= hi
  int64_t get_int_in(const std::string& key, int64_t lo, int64_t hi) const;  // lo <= v <= hi
  double get_nonneg_number(const std::string& key) const { return get_number_in(key, 0, HUGE_VAL); }
  double get_positive_number(const std::string& key) const;
  int64_t get_int(const std::string& key) const { return at(key).as_int(); }
  int64_t get_int(const std::string& key, int64_t fallback) const;
  int64_t get_nonneg_int(const std::string& key) const { return get_int_in(key, 0, INT64_MAX); }
  int64_t get_nonneg_int(const std::string& key, int64_t fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

 private:
  const nlohmann::json* value_;
  std::shared_ptr<const std::string> file_;
  std::string pointer_;
};

// Deepest nesting a document may have (protwin's own formats use fewer than 10 levels).
constexpr size_t kMaxJsonDepth = 256;

// A parsed document that owns its JSON; root() views it. Duplicate keys and nesting deeper than
// kMaxJsonDepth are errors naming the JSON pointer.
class JsonDocument {
 public:
  // Parses text; `name` is what diagnostics call the source (usually the path).
  static JsonDocument parse(const std::string& text, const std::string& name);
  // Reads and parses a file (".gz" files are not handled here).
  static JsonDocument load(const std::string& path);

  JsonNode root() const { return JsonNode(json_.get(), name_, ""); }
  const nlohmann::json& json() const { return *json_; }

 private:
  std::shared_ptr<const nlohmann::json> json_;
  std::shared_ptr<const std::string> name_;
};

// How errors show a value: "integer -1", "string \"ab\"", "null", "array [1,2]". At most 40
// bytes of its JSON are written, even for a huge or deep value, and the cut never falls inside a
// UTF-8 character.
std::string describe_json(const nlohmann::json& v);

// The longest prefix of `s` of at most `max_bytes` bytes that does not cut a UTF-8 character.
std::string utf8_prefix(const std::string& s, size_t max_bytes);

// Name of a JSON value's type as users read it ("object", "string", ...).
const char* json_type_name(const nlohmann::json& v);

// `key` as one JSON-pointer token (RFC 6901: "~" written "~0", "/" written "~1").
std::string pointer_token(const std::string& key);

}  // namespace protwin::traces
