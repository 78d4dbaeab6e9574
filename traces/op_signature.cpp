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

nlohmann::json kernel_to_json(const Kernel& k) {
  return {{"kind", k.sig.kind}, {"shape", k.sig.shape}, {"dtype", k.sig.dtype},
          {"count", k.count},   {"flops", k.flops},     {"bytes", k.bytes}};
}

// One pass over the object's members: plan ops carry thousands of kernels, and the simulator
// reads them on every run, so no repeated map lookups and no strings built unless there is an error.
Kernel kernel_from_json(const nlohmann::json& j, const std::function<std::string()>& where) {
  PROTWIN_CHECK(j.is_object(), where(), ": expected a kernel object");
  Kernel k;
  bool has_kind = false;
  auto number = [&](const nlohmann::json& v, const char* key) {
    PROTWIN_CHECK(v.is_number() && v.get<double>() >= 0, where(), "/", key, ": expected a number >= 0");
    return v.get<double>();
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "kind") {
      PROTWIN_CHECK(v.is_string(), where(), "/kind: expected a string");
      k.sig.kind = v.get_ref<const std::string&>();
      has_kind = true;
    } else if (key == "shape") {
      PROTWIN_CHECK(v.is_array(), where(), "/shape: expected an array of integers");
      k.sig.shape.reserve(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        const auto& d = v[i];
        PROTWIN_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, where(), "/shape/", i,
                      ": expected an integer >= 0");
        k.sig.shape.push_back(d.get<int64_t>());
      }
    } else if (key == "dtype") {
      PROTWIN_CHECK(v.is_string() && dtype_bytes(v.get_ref<const std::string&>()) > 0, where(),
                    "/dtype: expected one of fp32, fp16, bf16, fp64, int64, int32, int8");
      k.sig.dtype = v.get_ref<const std::string&>();
    } else if (key == "count") {
      k.count = static_cast<int64_t>(number(v, "count"));
    } else if (key == "flops") {
      k.flops = number(v, "flops");
    } else if (key == "bytes") {
      k.bytes = number(v, "bytes");
    }
  }
  PROTWIN_CHECK(has_kind, where(), "/kind: expected a string");
  return k;
}

KernelSet kernel_set_from_json(const nlohmann::json& j, const std::string& where) {
  PROTWIN_CHECK(j.is_array(), where, ": expected an array of kernels");
  KernelSet out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) out.push_back(kernel_from_json(j[i], [&] { return where + "/" + std::to_string(i); }));
  return out;
}

nlohmann::json kernel_set_to_json(const KernelSet& ks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& k : ks) a.push_back(kernel_to_json(k));
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
