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
// Groups: gemm and bmm by dtype (bf16 falls back to fp16 and back: the same tensor cores at the same
// dense peak, so the other dtype's measured time is the kernel's time); memory-bound kinds by kind,
// falling back to layernorm (rmsnorm) and then elementwise, any dtype (bytes are the coordinate);
// collectives by kind, ranks and ranks per node.
//
// A memory-bound kernel larger than every kernel of its first group with points (bytes beyond the
// largest) takes the correction of that group's largest kernels (extrapolated): bandwidth-bound
// from there on.
//
// A GEMM no point reaches but that the model puts in its flat regime (at least
// KernelGemmModel::flat_fraction of the dtype's sustained rate: many full waves of large tiles)
// takes the mean correction of the table's own flat-regime GEMMs (extrapolated): the rate the table
// measured where the model no longer sees shape effects, instead of the microbenchmark's sustained
// maximum the model assumes there.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hwmodels/cost_model.h"
#include "traces/op_profile.h"

namespace protwin::hw {

struct KernelTime {
  double seconds = 0;
  KernelSource source = KernelSource::kModel;
};

// A machine's GEMM model, kept by a KernelTable for its lookups (it must not refer to a
// HardwareCostModel, which may be copied or destroyed): seconds of a gemm/bmm signature, and its
// dtype's sustained flop/s.
struct KernelGemmModel {
  std::function<double(const traces::OpSignature&)> seconds;
  std::function<double(const std::string& dtype)> sustained_flops;
  bool flat_regime = true;  // extrapolate into the flat regime (machine kernel_tables.flat_regime)
  bool memory_regime = true;  // memory-bound kernels beyond the largest (kernel_tables.memory_regime)
  // The model's flat regime: at least this fraction of the dtype's sustained rate; and how far
  // (log2 distance over the weight shape) a flat-regime point reaches: no cut-off, the 1/d^2
  // weights alone. Chosen by a held-out split of vidur's tables (tests/hwmodels/
  // flat_regime_split_test.cpp): the grid point whose H100 Llama-2-7B GEMMs best predict its
  // Llama-2-70B ones, checked on the A100's (they were 0.9 and 2 octaves, assumed).
  double flat_fraction = 0.75;
  double flat_reach = std::numeric_limits<double>::infinity();
};

class KernelTable {
 public:
  // Seconds the model gives a kernel moving `bytes`; not finite when it cannot price it.
  using ModelFn = std::function<double(const traces::OpSignature&, double bytes)>;
  struct Correction {
    double ratio = 1;           // measured / model
    bool exact = false;         // the table has this kernel
    bool extrapolated = false;  // no point in reach: the table's flat-regime GEMM correction
  };
  // How the tables' corrections carry over to this machine:
  // - kAbsolute: tables measured on this GPU;
  // - kShapeOnly: another GPU: each group's corrections are taken relative to its largest kernels'
  //   (those within an octave of the largest per coordinate sum), so that only the shape effects
  //   carry over and the large-kernel rate stays this machine's own measurement;
  // - kGemmsAbsolute: another card with the same tensor cores (SMs and dense peaks, e.g. the 40 GB
  //   and 80 GB A100-SXM4): GEMMs as kAbsolute, memory-bound kernels and collectives as kShapeOnly.
  enum class Carry { kAbsolute, kShapeOnly, kGemmsAbsolute };
  // gemm: this machine's GEMM model; without it neither the flat-regime extrapolation nor the other
  // dtype's absolute time is used (the other dtype's shape effects only).
  KernelTable(const std::vector<const traces::OpProfile*>& tables, const ModelFn& model,
              Carry carry = Carry::kAbsolute, KernelGemmModel gemm = {});

  // The correction for a kernel moving `bytes` (memory-bound kinds, collectives), if any point is
  // within reach.
  std::optional<Correction> correction(const traces::OpSignature& sig, double bytes) const;

 private:
  struct Point {
    std::vector<double> x;
    double log_ratio;
  };
  bool flat(const traces::OpSignature& sig) const;  // the model's flat regime (gemm_ set)
  // A memory-bound kernel beyond its group's largest kernels: their correction (extrapolated).
  std::optional<Correction> beyond_largest(const std::vector<double>& x, const std::vector<std::string>& groups) const;
  double dtype_shift(const traces::OpSignature& sig, const std::string& group,
                     const std::vector<std::string>& groups) const;
  std::map<std::string, std::vector<Point>> groups_;
  std::map<std::string, double> largest_log_ratio_;  // per group: its largest kernels' correction
  std::map<std::string, double> largest_size_;       // per group: its largest kernel's coordinate sum
  std::map<std::string, std::vector<Point>> flat_points_;  // per GEMM group: its flat-regime kernels
  bool shape_only(const std::string& group) const;  // the group carries its shape effects only
  KernelGemmModel gemm_;
  Carry carry_ = Carry::kAbsolute;
};

// One embedded table by name (parsed once); an unknown name is an error listing the names.
const traces::OpProfile& kernel_table(const std::string& name);

}  // namespace protwin::hw
