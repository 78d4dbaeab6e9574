#include "traces/op_signature.h"

#include "traces/error.h"

namespace protwin::traces {

std::string OpSignature::key() const {
  std::string k = kind + ":" + dtype + ":";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) k += "x";
    k += std::to_string(shape[i]);
  }
  return k;
}

nlohmann::json kernel_set_to_json(const KernelSet& ks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& k : ks)
    a.push_back({{"kind", k.sig.kind}, {"shape", k.sig.shape}, {"dtype", k.sig.dtype},
                 {"count", k.count},   {"flops", k.flops},     {"bytes", k.bytes}});
  return a;
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "int32") return 4;
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp64" || dtype == "int64") return 8;
  if (dtype == "int8" || dtype == "fp8") return 1;
  return 0;
}

}  // namespace protwin::traces
