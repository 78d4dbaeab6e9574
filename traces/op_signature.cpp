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

Kernel kernel_from_json(const nlohmann::json& j, const std::string& where) {
  PROTWIN_CHECK(j.is_object(), where, ": expected a kernel object");
  Kernel k;
  PROTWIN_CHECK(j.contains("kind") && j["kind"].is_string(), where, "/kind: expected a string");
  k.sig.kind = j["kind"].get<std::string>();
  if (j.contains("shape")) {
    PROTWIN_CHECK(j["shape"].is_array(), where, "/shape: expected an array of integers");
    for (size_t i = 0; i < j["shape"].size(); ++i) {
      const auto& d = j["shape"][i];
      PROTWIN_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, where, "/shape/", i,
                    ": expected an integer >= 0");
      k.sig.shape.push_back(d.get<int64_t>());
    }
  }
  if (j.contains("dtype")) {
    PROTWIN_CHECK(j["dtype"].is_string() && dtype_bytes(j["dtype"].get<std::string>()) > 0, where,
                  "/dtype: expected one of fp32, fp16, bf16, fp64, int64, int32, int8");
    k.sig.dtype = j["dtype"].get<std::string>();
  }
  auto number = [&](const char* key, double fallback) {
    if (!j.contains(key)) return fallback;
    PROTWIN_CHECK(j[key].is_number() && j[key].get<double>() >= 0, where, "/", key,
                  ": expected a number >= 0");
    return j[key].get<double>();
  };
  k.count = static_cast<int64_t>(number("count", 1));
  k.flops = number("flops", 0);
  k.bytes = number("bytes", 0);
  return k;
}

std::vector<Kernel> kernels_of(const nlohmann::json& op_attrs, const std::string& where) {
  std::vector<Kernel> out;
  if (!op_attrs.is_object() || !op_attrs.contains("kernels")) return out;
  const auto& ks = op_attrs["kernels"];
  PROTWIN_CHECK(ks.is_array(), where, "/kernels: expected an array");
  out.reserve(ks.size());
  for (size_t i = 0; i < ks.size(); ++i)
    out.push_back(kernel_from_json(ks[i], where + "/kernels/" + std::to_string(i)));
  return out;
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "int32") return 4;
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp64" || dtype == "int64") return 8;
  if (dtype == "int8" || dtype == "fp8") return 1;
  return 0;
}

}  // namespace protwin::traces
