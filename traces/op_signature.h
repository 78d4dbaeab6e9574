// OpSignature: what a kernel is, independent of how long it takes: the key that op profiles
// (traces/profiles/*.json) and cost models share.
//
// Shapes by kind (all integers):
//   gemm             {m, n, k}                    C[m,n] = A[m,k] B[k,n], 2mnk flops
//   attention        {batch*heads, seq_q, seq_k, head_dim}   unfused: QK^T, softmax, PV
//   flash_attention  {batch*heads, seq_q, seq_k, head_dim}
//   layernorm, rmsnorm, gelu, swiglu, softmax, dropout, elementwise, cross_entropy, embedding,
//   adam             {elements} (cross_entropy: {rows, vocab})
// Plan ops carry their kernels in attrs["kernels"]: [{"kind","shape","dtype","count","flops","bytes"}].
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
};

nlohmann::json kernel_to_json(const Kernel& k);
// Errors name `where` (e.g. "plan.json:/ops/3/attrs/kernels/0").
Kernel kernel_from_json(const nlohmann::json& j, const std::string& where);
std::vector<Kernel> kernels_of(const nlohmann::json& op_attrs, const std::string& where);
// The same, with the location built only when there is an error (hot paths).
Kernel kernel_from_json(const nlohmann::json& j, const std::function<std::string()>& where);
std::vector<Kernel> kernels_of(const nlohmann::json& op_attrs, const std::function<std::string()>& where);

// Bytes per element of a dtype name ("fp32" 4, "fp16"/"bf16" 2, "int64" 8, ...); 0 if unknown.
int dtype_bytes(const std::string& dtype);

}  // namespace protwin::traces
