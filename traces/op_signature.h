// OpSignature: what a kernel is, independent of how long it takes: the key that op profiles
// (traces/profiles/*.json) and cost models share.
//
// Shapes by kind (all integers):
//   gemm             {m, n, k}                    C[m,n] = A[m,k] B[k,n], 2mnk flops
//   attention        {batch*heads, seq_q, seq_k, head_dim}   unfused: QK^T, softmax, PV
//   flash_attention  {batch*heads, seq_q, seq_k, head_dim}
//   layernorm, rmsnorm, gelu, swiglu, softmax, dropout, elementwise, cross_entropy, embedding,
//   adam             {elements} (cross_entropy: {rows, vocab})
// A plan lists each distinct kernel set once (Plan::kernel_sets, JSON /kernel_sets: arrays of
// {"kind","shape","dtype","count","flops","bytes"}); a compute op names its set by index (Op::kernels).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::traces {

struct OpSignature {
  std::string kind;
  std::vector<int64_t> shape;
  std::string dtype = "fp32";  // "fp32" | "fp16" | "bf16"

  // "gemm:bf16:8192x8192x8192" — stable, used as the profile key.
  std::string key() const;
  bool operator==(const OpSignature& o) const {
    return kind == o.kind && shape == o.shape && dtype == o.dtype;
  }
};

// One kernel of a plan op: its signature, how many times it runs, and its work per run.
struct Kernel {
  OpSignature sig;
  int64_t count = 1;
  double flops = 0;  // per run
  double bytes = 0;  // bytes read + written per run
  bool operator==(const Kernel& o) const {
    return count == o.count && flops == o.flops && bytes == o.bytes && sig == o.sig;
  }
};

// The kernels one compute op runs, in order.
using KernelSet = std::vector<Kernel>;

nlohmann::json kernel_set_to_json(const KernelSet& ks);  // read by traces/plan.cpp

// Bytes per element of a dtype name ("fp32" 4, "fp16"/"bf16" 2, "int64" 8, ...); 0 if unknown.
int dtype_bytes(const std::string& dtype);

}  // namespace protwin::traces
