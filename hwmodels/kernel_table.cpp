#include "hwmodels/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <numeric>

#include "traces/embedded_files.h"
#include "traces/error.h"
#include "traces/kernel_kinds.h"

namespace protwin::hw {

namespace kk = traces::kernel_kinds;  // the kernel-kind registry

namespace detail {
// Compiled in at build time from hwmodels/kernel_tables/*.json (hwmodels/kernel_tables.cmake).
const std::vector<traces::EmbeddedFile>& embedded_kernel_tables();
}  // namespace detail

namespace {

constexpr double kReach = 1.0;  // one octave in log2 space

double log2_of(double v) { return std::log2(std::max(v, 1.0)); }

// The groups a kernel is looked up in, in order, and its coordinates. Empty: not tabulated.
std::vector<std::string> groups_of(const traces::OpSignature& sig) {
  const std::string& k = sig.kind;
  if (k == "gemm" || k == "bmm") {
    std::vector<std::string> g = {k + ":" + sig.dtype};
    if (sig.dtype == "bf16") g.push_back(k + ":fp16");
    if (sig.dtype == "fp16") g.push_back(k + ":bf16");
    return g;
  }
  if (traces::is_collective_kind(k)) {
    if (sig.shape.size() != 3) return {};
    return {k + ":" + std::to_string(sig.shape[1]) + ":" + std::to_string(sig.shape[2])};
  }
  if (k.rfind("elementwise.", 0) == 0) return {"mem:elementwise"};  // one elementwise op of a table
  if (traces::is_memory_bound_kind(k)) {
    std::vector<std::string> g = {"mem:" + k};
    if (k == "rmsnorm") g.push_back("mem:layernorm");
    if (k != "elementwise") g.push_back("mem:elementwise");
    return g;
  }
  return {};
}

std::vector<double> coords_of(const traces::OpSignature& sig, double bytes) {
  if (sig.kind == kk::kGemm && sig.shape.size() == 3)
    return {log2_of(sig.shape[0]), log2_of(sig.shape[1]), log2_of(sig.shape[2])};
  if (sig.kind == kk::kBmm && sig.shape.size() == 4)
    return {log2_of(sig.shape[0]), log2_of(sig.shape[1]), log2_of(sig.shape[2]), log2_of(sig.shape[3])};
  if (traces::is_collective_kind(sig.kind)) return {log2_of(bytes)};
  if ((traces::is_memory_bound_kind(sig.kind) || sig.kind.rfind("elementwise.", 0) == 0) && bytes > 0) return {log2_of(bytes)};
  return {};
}

}  // namespace

const char* kernel_source_name(KernelSource s) {
  static constexpr const char* kNames[] = {"profile", "measured", "interpolated", "extrapolated", "derived",
                                           "model", "curve", "rates", "mixed", "none"};
  static_assert(std::size(kNames) == static_cast<size_t>(KernelSource::kNone) + 1, "a name per KernelSource");
  return kNames[static_cast<size_t>(s)];
}

bool KernelTable::flat(const traces::OpSignature& sig) const {
  if (!gemm_.seconds || !(sig.kind == kk::kGemm || sig.kind == kk::kBmm)) return false;
  const double flops = std::accumulate(sig.shape.begin(), sig.shape.end(), 2.0, std::multiplies<>());
  const double t = gemm_.seconds(sig), sustained = gemm_.sustained_flops(sig.dtype);
  return std::isfinite(t) && t > 0 && sustained > 0 && flops / t >= gemm_.flat_fraction * sustained;
}

bool KernelTable::shape_only(const std::string& group) const {
  const bool gemm = group.rfind("gemm:", 0) == 0 || group.rfind("bmm:", 0) == 0;
  return carry_ == Carry::kShapeOnly || (carry_ == Carry::kGemmsAbsolute && !gemm);
}

KernelTable::KernelTable(const std::vector<const traces::OpProfile*>& tables, const ModelFn& model, Carry carry,
                         KernelGemmModel gemm)
    : gemm_(std::move(gemm)), carry_(carry) {
  for (const traces::OpProfile* table : tables) {
    for (const auto& e : table->entries()) {
      const std::vector<std::string> groups = groups_of(e.sig);
      if (groups.empty()) continue;
      const double bytes = e.bytes ? *e.bytes : 0;
      std::vector<double> x = coords_of(e.sig, bytes);
      if (x.empty()) continue;
      const double predicted = model(e.sig, bytes);
      if (!(std::isfinite(predicted) && predicted > 0) || e.us.mean <= 0) continue;
      const double log_ratio = std::log(e.mean_seconds() / predicted);
      if (flat(e.sig)) flat_points_[groups.front()].push_back({x, log_ratio});
      groups_[groups.front()].push_back({std::move(x), log_ratio});
    }
  }
  for (auto& [name, points] : groups_) {
    auto size = [](const Point& p) { return std::accumulate(p.x.begin(), p.x.end(), 0.0); };
    double largest = 0;
    for (const Point& p : points) largest = std::max(largest, size(p));
    double ref = 0;
    int n = 0;
    for (const Point& p : points)
      if (size(p) >= largest - 1.0) {
        ref += p.log_ratio;
        ++n;
      }
    const bool relative = shape_only(name);
    largest_log_ratio_[name] = relative ? 0.0 : ref / n;
    largest_size_[name] = largest;
    if (relative)
      for (Point& p : points) p.log_ratio -= ref / n;
    // Another GPU's table keeps this machine's own measured rate for large GEMMs: no extrapolation.
    if (relative) flat_points_.erase(name);
  }
}

std::optional<KernelTable::Correction> KernelTable::correction(const traces::OpSignature& sig, double bytes) const {
  const std::vector<double> x = coords_of(sig, bytes);
  if (x.empty()) return std::nullopt;
  const std::vector<std::string> groups = groups_of(sig);
  for (const auto& g : groups) {
    auto it = groups_.find(g);
    if (it == groups_.end()) continue;
    double wsum = 0, sum = 0, exact_sum = 0;
    int exact_n = 0;
    for (const Point& p : it->second) {
      if (p.x.size() != x.size()) continue;
      double d2 = 0;
      for (size_t i = 0; i < x.size(); ++i) d2 += (p.x[i] - x[i]) * (p.x[i] - x[i]);
      if (d2 < 1e-12) {  // the kernel itself (several ops of one group can share a size: their mean)
        exact_sum += p.log_ratio;
        ++exact_n;
      } else if (d2 <= kReach * kReach) {
        wsum += 1 / d2;
        sum += p.log_ratio / d2;
      }
    }
    const double shift = dtype_shift(sig, g, groups);
    if (exact_n > 0) return Correction{std::exp(exact_sum / exact_n + shift), &g == &groups.front()};
    if (wsum > 0) return Correction{std::exp(sum / wsum + shift), false};
  }
  if (gemm_.memory_regime)
    if (auto c = beyond_largest(x, groups)) return c;
  if (!gemm_.flat_regime || !flat(sig)) return std::nullopt;
  for (const auto& g : groups) {
    auto it = flat_points_.find(g);
    if (it == flat_points_.end()) continue;
    double wsum = 0, sum = 0;
    for (const Point& p : it->second) {
      if (p.x.size() != x.size()) continue;
      // More rows (tokens) than a flat-regime point only adds full waves: no distance that way.
      const size_t rows = x.size() - 3;
      double d2 = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double d = i == rows ? std::max(0.0, p.x[i] - x[i]) : p.x[i] - x[i];
        d2 += d * d;
      }
      if (d2 > gemm_.flat_reach * gemm_.flat_reach) continue;
      d2 = std::max(d2, 1e-12);
      wsum += 1 / d2;
      sum += p.log_ratio / d2;
    }
    if (wsum > 0) return Correction{std::exp(sum / wsum + dtype_shift(sig, g, groups)), false, true};
  }
  return std::nullopt;
}

// A memory-bound kernel larger than every kernel of its group: past the table's largest kernels the
// time only grows with the bytes at the bandwidth those kernels reached (the cache and launch
// effects are behind them), so it takes their correction (tests/hwmodels/memory_regime_split_test.cpp).
std::optional<KernelTable::Correction> KernelTable::beyond_largest(const std::vector<double>& x,
                                                                   const std::vector<std::string>& groups) const {
  if (x.size() != 1) return std::nullopt;
  for (const auto& g : groups) {
    if (g.rfind("mem:", 0) != 0) continue;
    const auto it = largest_size_.find(g);
    if (it == largest_size_.end()) continue;
    if (x[0] <= it->second) return std::nullopt;  // inside the group's range, out of every point's reach
    return Correction{std::exp(largest_log_ratio_.at(g)), false, true};
  }
  return std::nullopt;
}

// What turns group g's correction (to its own dtype's model) into one for this kernel's dtype. For
// another dtype's GEMM group: its measured time is this kernel's (same tensor cores), i.e. the log
// of model(group dtype) / model(this dtype); without this machine's GEMM model, or for tables of
// another GPU, its shape effects only (relative to its largest kernels).
double KernelTable::dtype_shift(const traces::OpSignature& sig, const std::string& g,
                                const std::vector<std::string>& groups) const {
  if (g == groups.front() || !(sig.kind == kk::kGemm || sig.kind == kk::kBmm)) return 0.0;
  if (shape_only(g) || !gemm_.seconds) return -largest_log_ratio_.at(g);
  traces::OpSignature as_group = sig;
  as_group.dtype = g.substr(g.find(':') + 1);
  const double other = gemm_.seconds(as_group), own = gemm_.seconds(sig);
  return std::isfinite(other) && std::isfinite(own) && other > 0 && own > 0 ? std::log(other / own)
                                                                           : -largest_log_ratio_.at(g);
}

const traces::OpProfile& kernel_table(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<traces::OpProfile>> parsed;
  std::lock_guard<std::mutex> lock(mu);
  auto it = parsed.find(name);
  if (it != parsed.end()) return *it->second;
  for (const auto& f : detail::embedded_kernel_tables()) {
    if (f.name != name) continue;
    auto p = std::make_unique<traces::OpProfile>(
        traces::OpProfile::parse(f.text, "hwmodels/kernel_tables/" + name + ".json"));
    return *parsed.emplace(name, std::move(p)).first->second;
  }
  std::vector<std::string> names;
  for (const auto& f : detail::embedded_kernel_tables()) names.push_back(f.name);
  std::sort(names.begin(), names.end());
  throw Error("kernel table \"" + name + "\": no such table (available: " + protwin::detail::join(names) + ")");
}

}  // namespace protwin::hw
