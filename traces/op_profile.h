// OpProfile: per-op timings of one device, keyed by OpSignature (DESIGN §5).
//
// File format (traces/profiles/<device>.json):
//   {"format": "protwin.profile", "version": 1, "device": "NVIDIA A100-SXM4-80GB",
//    "provenance": {"kind": "measured", "source": "...", "note": "..."},
//    "ops": [{"key": "gemm:bf16:8192x8192x8192", "kind": "gemm", "shape": [8192, 8192, 8192],
//             "dtype": "bf16", "count": 12, "mean_us": .., "min_us": .., "max_us": .., "std_us": ..,
//             "bytes": ..?, "source": "...", "provenance": "derived"?, ...}]}
// std_us is the population standard deviation of the samples. Fields not listed above (raw kernel
// names, recorded input dims, the inputs of a derivation) are kept verbatim in `extra`.
//
// Kinds beyond traces/op_signature.h that profiles use:
//   h2d, h2d_pageable, d2h, d2h_pageable, d2d, p2p, memset   shape {bytes}, dtype "int8"
//   (h2d / d2h are pinned copies, the ones offloading uses)
//   kernel:<name>   a GPU kernel no kind was mapped to (shape {}), so nothing is lost
//   cpu:<aten op>   host-side op; shape = each input's rank followed by its dims
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/json_reader.h"
#include "traces/op_signature.h"

namespace protwin::traces {

// Running count / mean / min / max / population variance (Welford), mergeable.
struct OpTimeStats {
  int64_t count = 0;
  double mean = 0, m2 = 0, min = 0, max = 0;

  void add(double x);
  void merge(const OpTimeStats& o);
  double stddev() const;  // population
};

// The middle sample (the mean of the two middle ones for an even count); 0 when there is none.
double median(std::vector<double> samples);

struct OpProfileEntry {
  OpSignature sig;
  OpTimeStats us;                 // durations in microseconds
  std::optional<double> bytes;    // bytes moved per run, when known (copies, memsets)
  std::string source;             // where the numbers come from
  std::string provenance;         // per-entry kind; empty = the file's kind
  nlohmann::json extra = nlohmann::json::object();

  double mean_seconds() const { return us.mean * 1e-6; }
};

class OpProfile {
 public:
  OpProfile() = default;
  OpProfile(std::string device, std::string provenance_kind, std::string provenance_source);

  static OpProfile load(const std::string& path);
  static OpProfile parse(const std::string& text, const std::string& name);
  static OpProfile from_json(const JsonNode& root);
  nlohmann::json to_json() const;  // ops sorted by key, so files diff cleanly
  enum Layout { kIndented, kOneOpPerLine };  // kOneOpPerLine: compact, still diffs by entry
  void save(const std::string& path, Layout layout = kIndented) const;  // atomic

  const std::string& device() const { return device_; }
  void set_device(std::string d) { device_ = std::move(d); }
  // {"kind", "source", "note"?}; kind is one of peak, measured, proxy, derived, assumed.
  const nlohmann::json& provenance() const { return provenance_; }
  void set_provenance(nlohmann::json p) { provenance_ = std::move(p); }

  // Adds an entry; an entry with the same key is merged into the existing one (pooled stats).
  void add(OpProfileEntry e);
  // Adds every entry of `other` (see add()). The device and provenance of *this are kept.
  void merge(const OpProfile& other);

  const OpProfileEntry* find(const std::string& key) const;
  const OpProfileEntry* find(const OpSignature& sig) const { return find(sig.key()); }
  // Mean duration in seconds, if the profile has this op.
  std::optional<double> lookup(const OpSignature& sig) const;

  const std::vector<OpProfileEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::string device_;
  nlohmann::json provenance_ = nlohmann::json::object();
  std::vector<OpProfileEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// Profiles shipped in traces/profiles/*.json, embedded at build time; named by file stem
// ("rtx3090", "a100-sxm4-80gb", "a100-sxm4-80gb_kineto").
std::vector<std::string> shipped_profile_names();
// Errors list the names available.
OpProfile shipped_profile(const std::string& name);

}  // namespace protwin::traces
