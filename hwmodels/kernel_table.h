// Measured kernel tables (hwmodels/kernel_tables/*.json, protwin.profile files made by
// `protwin import-table` from public profiles; issue #19) as corrections to a kernel model.
//
// Every table point stores log(measured / model) for the machine it prices. A kernel's time is
// model x exp(correction): the point's own when the table has the kernel (measured), else the
// inverse-square-distance mean over the points within one octave (distance <= 1 in log2 space
// over the shape: m, n, k for GEMMs; batch, m, n, k for batched GEMMs; bytes for memory-bound
// kernels and collectives) (interpolated), else none (the model alone). Interpolating the
// correction rather than the time keeps the model's shape effects (tiles, waves, rooflines)
// between and beyond measured points.
//
// Groups: gemm and bmm by dtype (bf16 falls back to fp16 and back: same tensor cores, shape effects
// only, as for another GPU below, since each dtype has its own measured sustained rate); memory-bound
// kinds by kind, falling back to layernorm (rmsnorm) and then elementwise, any dtype (bytes are
// the coordinate); collectives by kind, ranks and ranks per node.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hwmodels/cost_model.h"
#include "traces/op_profile.h"

namespace protwin::hw {

struct KernelTime {
  double seconds = 0;
  KernelSource source = KernelSource::kModel;
};

class KernelTable {
 public:
  // Seconds the model gives a kernel moving `bytes`; not finite when it cannot price it.
  using ModelFn = std::function<double(const traces::OpSignature&, double bytes)>;
  struct Correction {
    double ratio = 1;   // measured / model
    bool exact = false; // the table has this kernel
  };

  // shape_only (tables measured on another GPU): each group's corrections are taken relative to
  // its largest kernels' (those within an octave of the largest per coordinate sum), so that only
  // the shape effects carry over and the large-kernel rate stays this machine's own measurement.
  KernelTable(const std::vector<const traces::OpProfile*>& tables, const ModelFn& model, bool shape_only = false);

  // The correction for a kernel moving `bytes` (memory-bound kinds, collectives), if any point is
  // within reach.
  std::optional<Correction> correction(const traces::OpSignature& sig, double bytes) const;
  size_t size() const { return points_; }

 private:
  struct Point {
    std::vector<double> x;
    double log_ratio;
  };
  std::map<std::string, std::vector<Point>> groups_;
  std::map<std::string, double> largest_log_ratio_;  // per group: its largest kernels' correction
  size_t points_ = 0;
};

// Names of the embedded tables, sorted; one table by name (parsed once), errors list the names.
std::vector<std::string> kernel_table_names();
const traces::OpProfile& kernel_table(const std::string& name);

// True for kinds priced as memory-bound passes (by their bytes).
bool is_memory_bound_kind(const std::string& kind);
bool is_collective_kind(const std::string& kind);

}  // namespace protwin::hw
