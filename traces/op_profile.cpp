#include "traces/op_profile.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "traces/error.h"
#include "traces/embedded_files.h"
#include "traces/file_io.h"

namespace protwin::traces {

namespace detail {
// Compiled in at build time from traces/profiles/*.json (traces/profiles.cmake).
const std::vector<EmbeddedFile>& shipped_profile_files();
}  // namespace detail

namespace {

constexpr const char* kFormat = "protwin.profile";
constexpr int64_t kVersion = 1;

// The provenance kinds every hardware number uses.
bool is_provenance_kind(const std::string& kind) {
  return kind == "peak" || kind == "measured" || kind == "proxy" || kind == "derived" ||
         kind == "assumed";
}

bool is_profile_dtype(const std::string& d) {
  return dtype_bytes(d) > 0 || d == "bool" || d == "uint8" || d == "unknown";
}

// Durations are printed in µs; a relative slack keeps min <= mean <= max checks robust to the
// rounding of a JSON round trip.
bool le_with_slack(double a, double b) { return a <= b + 1e-9 * std::max(1.0, std::fabs(b)); }

OpProfileEntry entry_from_json(const JsonNode& n) {
  OpProfileEntry e;
  e.sig.kind = n.get_string("kind");
  if (e.sig.kind.empty()) n.at("kind").fail("expected a non-empty string");
  const JsonNode shape = n.at("shape");
  for (size_t i = 0; i < shape.size(); ++i) {
    const JsonNode d = shape.at(i);
    const int64_t v = d.as_int();
    if (v < 0) d.fail("expected an integer >= 0, got " + std::to_string(v));
    e.sig.shape.push_back(v);
  }
  e.sig.dtype = n.get_string("dtype");
  if (!is_profile_dtype(e.sig.dtype))
    n.at("dtype").fail("expected one of fp32, fp16, bf16, fp64, fp8, int64, int32, int8, uint8, "
                       "bool, unknown, got \"" + e.sig.dtype + "\"");
  const std::string key = n.get_string("key");
  if (key != e.sig.key())
    n.at("key").fail("\"" + key + "\" does not match kind, dtype and shape (expected \"" +
                     e.sig.key() + "\")");

  const int64_t count = n.get_nonneg_int("count");
  if (count < 1) n.at("count").fail("expected an integer >= 1, got " + std::to_string(count));
  const double mean = n.get_nonneg_number("mean_us");
  const double mn = n.get_nonneg_number("min_us");
  const double mx = n.get_nonneg_number("max_us");
  const double sd = n.get_nonneg_number("std_us");
  if (!le_with_slack(mn, mean) || !le_with_slack(mean, mx))
    n.fail("expected min_us <= mean_us <= max_us, got " + std::to_string(mn) + ", " +
           std::to_string(mean) + ", " + std::to_string(mx));
  e.us.count = count;
  e.us.mean = mean;
  e.us.min = mn;
  e.us.max = mx;
  e.us.m2 = sd * sd * static_cast<double>(count);
  if (n.has("bytes")) e.bytes = n.get_nonneg_number("bytes");
  e.source = n.get_string("source");
  if (n.has("provenance")) {
    e.provenance = n.get_string("provenance");
    if (!is_provenance_kind(e.provenance))
      n.at("provenance").fail("expected one of peak, measured, proxy, derived, assumed, got \"" +
                              e.provenance + "\"");
  }
  static const char* kKnown[] = {"key",    "kind",   "shape",  "dtype", "count",  "mean_us",
                                 "min_us", "max_us", "std_us", "bytes", "source", "provenance"};
  for (const auto& [k, v] : n.raw().items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown)) e.extra[k] = v;
  }
  return e;
}

nlohmann::json entry_to_json(const OpProfileEntry& e) {
  nlohmann::json j = nlohmann::json::object();
  j["key"] = e.sig.key();
  j["kind"] = e.sig.kind;
  j["shape"] = e.sig.shape;
  j["dtype"] = e.sig.dtype;
  j["count"] = e.us.count;
  j["mean_us"] = e.us.mean;
  j["min_us"] = e.us.min;
  j["max_us"] = e.us.max;
  j["std_us"] = e.us.stddev();
  if (e.bytes) j["bytes"] = *e.bytes;
  j["source"] = e.source;
  if (!e.provenance.empty()) j["provenance"] = e.provenance;
  for (const auto& [k, v] : e.extra.items()) j[k] = v;
  return j;
}

}  // namespace

void OpTimeStats::add(double x) {
  OpTimeStats one;
  one.count = 1;
  one.mean = one.min = one.max = x;
  merge(one);
}

void OpTimeStats::merge(const OpTimeStats& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  // Chan et al. pairwise update: exact for pooled mean and population variance.
  const double n1 = static_cast<double>(count), n2 = static_cast<double>(o.count);
  const double delta = o.mean - mean;
  const double n = n1 + n2;
  mean += delta * n2 / n;
  m2 += o.m2 + delta * delta * n1 * n2 / n;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  count += o.count;
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

double OpTimeStats::stddev() const {
  if (count == 0) return 0;
  return std::sqrt(std::max(0.0, m2 / static_cast<double>(count)));
}

OpProfile::OpProfile(std::string device, std::string provenance_kind,
                     std::string provenance_source)
    : device_(std::move(device)),
      provenance_({{"kind", std::move(provenance_kind)}, {"source", std::move(provenance_source)}}) {}

OpProfile OpProfile::load(const std::string& path) { return parse(read_file(path), path); }

OpProfile OpProfile::parse(const std::string& text, const std::string& name) {
  const JsonDocument doc = JsonDocument::parse(text, name);
  return from_json(doc.root());
}

OpProfile OpProfile::from_json(const JsonNode& root) {
  root.check_format(kFormat, kVersion, "op profile");
  OpProfile p;
  p.device_ = root.get_string("device");
  const JsonNode prov = root.at("provenance");
  const std::string kind = prov.get_string("kind");
  if (!is_provenance_kind(kind))
    prov.at("kind").fail("expected one of peak, measured, proxy, derived, assumed, got \"" + kind +
                         "\"");
  prov.get_string("source");  // required
  // Its measured slowdowns are ratios of times the simulator applies (hw::contention_rules_from_profile).
  if (const auto c = prov.find("contention"); c && c->is_object())
    for (const auto& item : c->raw().items())
      if (item.key().find("slowdown") != std::string::npos) c->get_positive_number(item.key());
  p.provenance_ = prov.raw();

  const JsonNode ops = root.at("ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    const JsonNode n = ops.at(i);
    OpProfileEntry e = entry_from_json(n);
    auto it = p.index_.find(e.sig.key());
    if (it != p.index_.end())
      n.at("key").fail("duplicate key \"" + e.sig.key() + "\" (first at /ops/" +
                       std::to_string(it->second) + ")");
    p.index_.emplace(e.sig.key(), p.entries_.size());
    p.entries_.push_back(std::move(e));
  }
  return p;
}

nlohmann::json OpProfile::to_json() const {
  std::vector<const OpProfileEntry*> sorted;
  sorted.reserve(entries_.size());
  for (const auto& e : entries_) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const OpProfileEntry* a, const OpProfileEntry* b) { return a->sig.key() < b->sig.key(); });
  nlohmann::json ops = nlohmann::json::array();
  for (const auto* e : sorted) ops.push_back(entry_to_json(*e));
  return {{"format", kFormat}, {"version", kVersion}, {"device", device_},
          {"provenance", provenance_}, {"ops", std::move(ops)}};
}

void OpProfile::save(const std::string& path, Layout layout) const {
  nlohmann::json j = to_json();
  if (layout == kIndented) {
    write_file_atomic(path, j.dump(1) + "\n");
    return;
  }
  std::string text = "{\"format\": " + j["format"].dump() + ", \"version\": " + j["version"].dump() +
                     ", \"device\": " + j["device"].dump() + ",\n \"provenance\": " + j["provenance"].dump() +
                     ",\n \"ops\": [\n";
  const auto& ops = j["ops"];
  for (size_t i = 0; i < ops.size(); ++i) text += "  " + ops[i].dump() + (i + 1 < ops.size() ? ",\n" : "\n");
  write_file_atomic(path, text + " ]}\n");
}

void OpProfile::add(OpProfileEntry e) {
  const std::string key = e.sig.key();
  auto it = index_.find(key);
  if (it == index_.end()) {
    index_.emplace(key, entries_.size());
    entries_.push_back(std::move(e));
    return;
  }
  OpProfileEntry& mine = entries_[it->second];
  mine.us.merge(e.us);
  if (!mine.bytes) mine.bytes = e.bytes;
  if (!e.source.empty() && mine.source.find(e.source) == std::string::npos)
    mine.source = mine.source.empty() ? e.source : mine.source + "; " + e.source;
  for (const auto& [k, v] : e.extra.items()) {
    if (!mine.extra.contains(k)) mine.extra[k] = v;
  }
}

void OpProfile::merge(const OpProfile& other) {
  for (const auto& e : other.entries_) {
    OpProfileEntry copy = e;
    if (copy.provenance.empty() && other.provenance_.contains("kind"))
      copy.provenance = other.provenance_["kind"].get<std::string>();
    add(std::move(copy));
  }
}

const OpProfileEntry* OpProfile::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::optional<double> OpProfile::lookup(const OpSignature& sig) const {
  const OpProfileEntry* e = find(sig);
  if (!e) return std::nullopt;
  return e->mean_seconds();
}

std::vector<std::string> shipped_profile_names() {
  std::vector<std::string> names;
  for (const auto& f : detail::shipped_profile_files()) names.push_back(f.name);
  std::sort(names.begin(), names.end());
  return names;
}

OpProfile shipped_profile(const std::string& name) {
  for (const auto& f : detail::shipped_profile_files()) {
    if (f.name == name) return OpProfile::parse(f.text, "traces/profiles/" + name + ".json");
  }
  std::string avail;
  for (const auto& n : shipped_profile_names()) avail += (avail.empty() ? "" : ", ") + n;
  throw Error("profile \"" + name + "\": no such shipped profile (available: " + avail + ")");
}

}  // namespace protwin::traces
