// Kineto importer against real traces (HTA test data, tests/data/). Every oracle is computed here
// from the raw events with zlib + nlohmann, not through the importer.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/traces_profiles/raw_trace.h"
#include "traces/error.h"
#include "traces/kernel_kinds.h"
#include "traces/kineto_import.h"

using protwin::test::data_path;
using protwin::test::read_raw_trace;
using namespace protwin::traces;

namespace {

const std::string kA100 = "a100-sxm4-80gb_ddp16_rank0.json.gz";
const std::string kAlexnet = "a100-40gb_alexnet.json.gz";

// Parsed once per test binary: the trace is 25 MB of JSON.
const nlohmann::json& raw_a100() {
  static const nlohmann::json j = read_raw_trace(data_path(kA100));
  return j;
}
const OpProfile& imported_a100() {
  static const OpProfile p = import_kineto(data_path(kA100));
  return p;
}

struct Samples {
  std::vector<double> v;
  double mean() const {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  }
  double stddev() const {
    const double m = mean();
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size()));
  }
  double min() const { return *std::min_element(v.begin(), v.end()); }
  double max() const { return *std::max_element(v.begin(), v.end()); }
};

void check_entry(const OpProfileEntry& e, const Samples& s) {
  REQUIRE(e.us.count == static_cast<int64_t>(s.v.size()));
  CHECK(e.us.mean == Approx(s.mean()).epsilon(1e-12));
  CHECK(e.us.min == s.min());
  CHECK(e.us.max == s.max());
  CHECK(e.us.stddev() == Approx(s.stddev()).epsilon(1e-9));
}

std::string tmp_path(const std::string& name) {
  return std::string(PROTWIN_BINARY_DIR) + "/traces_profiles_" + name;
}

void write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

std::string error_of(const std::string& path) {
  try {
    import_kineto(path);
  } catch (const protwin::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("pinned H2D copies of the A100-SXM4-80GB trace match the raw events", "[kineto]") {
  Samples s;
  for (const auto& e : raw_a100()["traceEvents"]) {
    if (e.value("cat", "") == "gpu_memcpy" && e["name"] == "Memcpy HtoD (Pinned -> Device)" &&
        e["args"]["bytes"] == 45842432)
      s.v.push_back(e["dur"].get<double>());
  }
  REQUIRE(s.v.size() == 5);
  const OpProfileEntry* e = imported_a100().find("h2d:int8:45842432");
  REQUIRE(e);
  check_entry(*e, s);
  REQUIRE(e->bytes);
  CHECK(*e->bytes == 45842432);
  // REFERENCE.md §5: "pinned H2D of 45.8 MB in about 3.9 ms", i.e. near 11.7 GB/s.
  const double gbps = *e->bytes / e->us.mean / 1e3;
  CHECK(e->us.mean == Approx(3900).margin(150));
  CHECK(gbps == Approx(11.7).margin(0.5));
  CHECK(imported_a100().device() == "NVIDIA A100-SXM4-80GB");
}

TEST_CASE("every memcpy lands in its direction / host-memory kind with its bytes", "[kineto]") {
  // Oracle: count and total time per (event name, bytes), straight from the raw events.
  std::map<std::pair<std::string, int64_t>, Samples> raw;
  for (const auto& e : raw_a100()["traceEvents"])
    if (e.value("cat", "") == "gpu_memcpy")
      raw[{e["name"].get<std::string>(), e["args"]["bytes"].get<int64_t>()}].v.push_back(e["dur"].get<double>());
  const std::map<std::string, std::string> kind = {
      {"Memcpy HtoD (Pinned -> Device)", "h2d"},
      {"Memcpy HtoD (Pageable -> Device)", "h2d_pageable"},
      {"Memcpy DtoH (Device -> Pageable)", "d2h_pageable"},
      {"Memcpy DtoD (Device -> Device)", "d2d"}};
  REQUIRE(raw.size() > 10);
  for (const auto& [name_bytes, s] : raw) {
    INFO(name_bytes.first << " " << name_bytes.second);
    REQUIRE(kind.count(name_bytes.first));
    const OpProfileEntry* e =
        imported_a100().find(kind.at(name_bytes.first) + ":int8:" + std::to_string(name_bytes.second));
    REQUIRE(e);
    check_entry(*e, s);
  }
}

TEST_CASE("fused Adam kernel times of the A100-SXM4-80GB trace match the raw events", "[kineto]") {
  Samples s;
  for (const auto& e : raw_a100()["traceEvents"]) {
    if (e.value("cat", "") == "kernel" &&
        e["name"].get<std::string>().find("AdamFunctor<float>") != std::string::npos)
      s.v.push_back(e["dur"].get<double>());
  }
  REQUIRE(s.v.size() == 108);
  // The multi-tensor Adam kernel is launched outside any recorded ATen op: dtype from its name.
  const OpProfileEntry* e = imported_a100().find("adam:fp32:");
  REQUIRE(e);
  check_entry(*e, s);
  REQUIRE(e->extra.at("names").size() == 1);
  CHECK(e->extra.at("names")[0].get<std::string>().rfind("multi_tensor_apply_kernel<", 0) == 0);
}

TEST_CASE("GEMM shapes come from the launching aten::addmm", "[kineto]") {
  // Oracle by brute force: kernel -> runtime call (same correlation) -> shortest cpu_op on the
  // same thread that contains the call.
  const auto& evs = raw_a100()["traceEvents"];
  std::vector<const nlohmann::json*> ops;
  std::map<int64_t, const nlohmann::json*> calls;
  for (const auto& e : evs) {
    const std::string cat = e.value("cat", "");
    if (cat == "cpu_op") ops.push_back(&e);
    if (cat == "cuda_runtime" && e["args"].contains("correlation"))
      calls[e["args"]["correlation"].get<int64_t>()] = &e;
  }
  const nlohmann::json want_dims = nlohmann::json::parse("[[64], [4096, 100], [100, 64], [], []]");
  Samples s;
  for (const auto& k : evs) {
    if (k.value("cat", "") != "kernel" || k["name"].get<std::string>().find("s1688gemm") == std::string::npos)
      continue;
    auto c = calls.find(k["args"]["correlation"].get<int64_t>());
    if (c == calls.end()) continue;
    const auto& r = *c->second;
    const double t0 = r["ts"].get<double>(), t1 = t0 + r["dur"].get<double>();
    const nlohmann::json* best = nullptr;
    for (const auto* o : ops) {
      if ((*o)["tid"] != r["tid"] || (*o)["pid"] != r["pid"]) continue;
      const double o0 = (*o)["ts"].get<double>(), o1 = o0 + (*o)["dur"].get<double>();
      if (o0 <= t0 && t1 <= o1 && (!best || (*o)["dur"].get<double>() < (*best)["dur"].get<double>()))
        best = o;
    }
    if (best && (*best)["name"] == "aten::addmm" && (*best)["args"]["Input Dims"] == want_dims)
      s.v.push_back(k["dur"].get<double>());
  }
  REQUIRE(!s.v.empty());
  // addmm(bias[64], A[4096,100], B[100,64]): m=4096, n=64, k=100, fp32 inputs.
  const OpProfileEntry* e = imported_a100().find(OpSignature{"gemm", {4096, 64, 100}, "fp32"});
  REQUIRE(e);
  check_entry(*e, s);
}

TEST_CASE("CPU ATen ops keep their input dims", "[kineto]") {
  Samples s;
  const nlohmann::json want = nlohmann::json::parse("[[9, 4096], [9, 4096], []]");
  for (const auto& e : raw_a100()["traceEvents"])
    if (e.value("cat", "") == "cpu_op" && e["name"] == "aten::copy_" && e["args"].value("Input Dims", nlohmann::json()) == want &&
        e["args"]["Input type"][0] == "float")
      s.v.push_back(e["dur"].get<double>());
  REQUIRE(!s.v.empty());
  // Shape encoding: each input's rank, then its dims.
  const OpProfileEntry* e = imported_a100().find(OpSignature{"cpu:aten::copy_", {2, 9, 4096, 2, 9, 4096, 0}, "fp32"});
  REQUIRE(e);
  check_entry(*e, s);
  CHECK(e->extra.at("input_dims") == want);
}

TEST_CASE("nothing is lost: every GPU event is counted once", "[kineto]") {
  int64_t raw_gpu = 0;
  for (const auto& e : raw_a100()["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") ++raw_gpu;
  }
  int64_t imported = 0;
  for (const auto& e : imported_a100().entries())
    if (e.sig.kind.rfind("cpu:", 0) != 0) imported += e.us.count;
  CHECK(imported == raw_gpu);
  CHECK(raw_gpu == 6080 + 1390 + 277);  // kernels + memcpys + memsets, as counted by Python's json module
}

TEST_CASE("plain JSON, kernel kinds and pageable copies of the AlexNet trace", "[kineto]") {
  const nlohmann::json raw = read_raw_trace(data_path(kAlexnet));
  // The same trace uncompressed must import identically (gzip is detected from content).
  const std::string plain = tmp_path("alexnet.json");
  write(plain, raw.dump());
  const OpProfile a = import_kineto(data_path(kAlexnet));
  const OpProfile b = import_kineto(plain);
  CHECK(a.device() == "NVIDIA A100-PG509-200");
  CHECK(a.to_json()["ops"].size() == b.to_json()["ops"].size());

  Samples sgemm, h2d;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("cat", "") == "kernel" && e["name"] == "ampere_sgemm_32x32_sliced1x4_tn")
      sgemm.v.push_back(e["dur"].get<double>());
    if (e.value("cat", "") == "gpu_memcpy" && e["args"]["bytes"] == 150994944)
      h2d.v.push_back(e["dur"].get<double>());
  }
  // No "Input Dims" recorded in this trace, so the GEMM shape is unknown ({}).
  const OpProfileEntry* g = a.find("gemm:fp32:");
  REQUIRE(g);
  check_entry(*g, sgemm);
  const OpProfileEntry* c = a.find("h2d_pageable:int8:150994944");
  REQUIRE(c);
  check_entry(*c, h2d);
  CHECK(a.find("conv:fp32:"));  // cuDNN implicit-GEMM convolutions are not GEMMs
}

TEST_CASE("the kinds the importer names are the kernel-kind registry's", "[kineto]") {
  // Oracle: traces/kernel_kinds.h, shared with the workload, the cost model and the profiler.
  for (const char* name : {"ampere_sgemm_128x64_nn", "flash_fwd_kernel", "vectorized_layer_norm_kernel",
                           "rms_norm_kernel", "softmax_warp_forward", "multi_tensor_apply_kernel<AdamFunctor>",
                           "ncclKernel_AllReduce_RING_LL_Sum_half", "ncclKernel_AllGather_RING_LL_Sum_half",
                           "ncclKernel_ReduceScatter_RING_LL_Sum_half", "ncclKernel_Broadcast_RING_LL_Sum_half",
                           "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"}) {
    INFO(name);
    CHECK(protwin::traces::is_kernel_kind(kernel_kind(name)));
  }
}

TEST_CASE("kernel names map to kinds and dtypes", "[kineto]") {
  CHECK(kernel_kind("ampere_sgemm_128x64_nn") == "gemm");
  CHECK(kernel_kind("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>("
                    "cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1::Params)") == "gemm");
  CHECK(kernel_kind("void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int)") ==
        "kernel:fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>");
  CHECK(kernel_kind("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw") == "conv");
  CHECK(kernel_kind("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") ==
        "send_recv");
  CHECK(kernel_kind("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "all_reduce");
  CHECK(kernel_kind("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false>>") == "flash_attention");
  CHECK(kernel_kind("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int)") ==
        "layernorm");
  CHECK(short_kernel_name("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, "
                          "float const*)") == "at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>");
  CHECK(kernel_dtype("void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<double>, "
                     "at::detail::Array<char*, 3> >(int)") == "fp64");
  CHECK(kernel_dtype("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_nn") == "fp16");
  CHECK(kernel_dtype("triton__0d1d2d3d") == "unknown");
  CHECK(dtype_from_torch("c10::BFloat16") == "bf16");
  CHECK(dtype_from_torch("long int") == "int64");
}

TEST_CASE("bad Kineto inputs fail with the file and what was expected", "[kineto]") {
  SECTION("missing file") {
    const std::string p = tmp_path("does_not_exist.json.gz");
    CHECK(error_of(p) == p + ": cannot open for reading (No such file or directory)");
  }
  SECTION("a .gz name without gzip content") {
    const std::string p = tmp_path("not_gzip.json.gz");
    write(p, "{\"traceEvents\": []}");
    CHECK(error_of(p) == p + ": not a gzip file (expected the gzip magic bytes 1f 8b)");
  }
  SECTION("truncated gzip") {
    std::ifstream in(data_path(kAlexnet), std::ios::binary);
    std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string p = tmp_path("truncated.json.gz");
    write(p, gz.substr(0, gz.size() / 2));
    CHECK(error_of(p) == p + ": corrupt gzip data (truncated)");
  }
  SECTION("malformed JSON") {
    const std::string p = tmp_path("malformed.json");
    write(p, "{\"traceEvents\": [\n  {\"ph\": \"X\",,}\n]}");
    CHECK(error_of(p) == p + ": malformed JSON at line 2, column 14");
  }
  SECTION("no traceEvents") {
    const std::string p = tmp_path("no_events.json");
    write(p, "{\"schemaVersion\": 1}");
    CHECK(error_of(p) == p + ":/: missing required field \"traceEvents\"");
  }
  SECTION("traceEvents not an array") {
    const std::string p = tmp_path("events_object.json");
    write(p, "{\"traceEvents\": {}}");
    CHECK(error_of(p) == p + ":/traceEvents: expected an array, got object {}");
  }
  SECTION("a complete event without a duration") {
    const std::string p = tmp_path("no_dur.json");
    write(p, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}]}");
    CHECK(error_of(p) == p + ":/traceEvents/0: expected a \"dur\" number on a complete (\"X\") event");
  }
}
