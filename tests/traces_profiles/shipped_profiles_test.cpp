// The profiles shipped in traces/profiles/ (embedded in the library): derived ones recompute from
// the inputs they record (closed forms), the measured one equals a fresh import of the real trace.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/traces_profiles/raw_trace.h"
#include "traces/error.h"
#include "traces/kineto_import.h"
#include "traces/op_profile.h"

using namespace protwin::traces;

TEST_CASE("the shipped profiles are embedded and named by file stem", "[shipped]") {
  CHECK(shipped_profile_names() ==
        std::vector<std::string>{"a100-sxm4-80gb", "a100-sxm4-80gb_kineto", "host-emulated", "rtx3090"});
  CHECK(shipped_profile("rtx3090").device() == "NVIDIA GeForce RTX 3090");
  CHECK(shipped_profile("a100-sxm4-80gb").device() == "NVIDIA A100-SXM4-80GB");
  CHECK(shipped_profile("a100-sxm4-80gb_kineto").device() == "NVIDIA A100-SXM4-80GB");
  try {
    shipped_profile("h100");
    FAIL("expected an error");
  } catch (const protwin::Error& e) {
    CHECK(std::string(e.what()) == "profile \"h100\": no such shipped profile (available: a100-sxm4-80gb, "
                                   "a100-sxm4-80gb_kineto, host-emulated, rtx3090)");
  }
}

TEST_CASE("derived entries equal the closed form of the inputs they record", "[shipped]") {
  for (const std::string name : {"rtx3090", "a100-sxm4-80gb"}) {
    const OpProfile p = shipped_profile(name);
    CHECK(p.provenance().at("kind") == "derived");
    REQUIRE(p.size() >= 5);
    for (const auto& e : p.entries()) {
      INFO(name << " " << e.sig.key());
      CHECK(e.provenance == "derived");
      CHECK(!e.source.empty());
      const nlohmann::json& d = e.extra.at("derived_from");
      if (e.sig.kind == "gemm") {
        // t = 2mnk / TFLOPS; the range of measured TFLOPS bounds the time.
        const double flops = 2.0 * static_cast<double>(e.sig.shape[0] * e.sig.shape[1] * e.sig.shape[2]);
        CHECK(d.at("flops").get<double>() == flops);
        CHECK(e.us.mean == Approx(flops / (d.at("tflops").get<double>() * 1e12) * 1e6));
        const double tf = d.at("tflops").get<double>();
        const auto range = d.value("tflops_range", std::vector<double>{tf, tf});
        CHECK(e.us.min == Approx(flops / (range[1] * 1e12) * 1e6));
        CHECK(e.us.max == Approx(flops / (range[0] * 1e12) * 1e6));
      } else {
        // Copies: t = bytes / GB/s.
        REQUIRE((e.sig.kind == "h2d" || e.sig.kind == "d2h"));
        REQUIRE(e.bytes);
        CHECK(*e.bytes == static_cast<double>(e.sig.shape[0]));
        CHECK(e.us.mean == Approx(*e.bytes / (d.at("GBps").get<double>() * 1e9) * 1e6));
      }
    }
  }
}

TEST_CASE("derived numbers are the published ones (hardware.md)", "[shipped]") {
  // RTX 3090, fp16 8192^3: ZZC measured 75.5-75.9 TFLOPS -> 1.0995e12 / 75.7e12 s.
  const OpProfile r = shipped_profile("rtx3090");
  REQUIRE(r.lookup({"gemm", {8192, 8192, 8192}, "fp16"}));
  CHECK(*r.lookup({"gemm", {8192, 8192, 8192}, "fp16"}) == Approx(2.0 * 8192 * 8192 * 8192 / 75.7e12));
  // A100-SXM4, pinned H2D of 1 GiB at NVBW#42's 25.1 GB/s.
  const OpProfile a = shipped_profile("a100-sxm4-80gb");
  REQUIRE(a.lookup({"h2d", {1073741824}, "int8"}));
  CHECK(*a.lookup({"h2d", {1073741824}, "int8"}) == Approx(1073741824 / 25.1e9));
}

TEST_CASE("the measured A100 profile is the import of the real HTA trace", "[shipped]") {
  const OpProfile shipped = shipped_profile("a100-sxm4-80gb_kineto");
  CHECK(shipped.provenance().at("kind") == "measured");
  CHECK(shipped.provenance().at("source").get<std::string>().find("HolisticTraceAnalysis") != std::string::npos);
  KinetoImportOptions opts;
  opts.cpu_ops = false;  // the shipped profile keeps only device-side work
  const OpProfile fresh =
      import_kineto(protwin::test::data_path("a100-sxm4-80gb_ddp16_rank0.json.gz"), opts);
  REQUIRE(shipped.size() == fresh.size());
  for (const auto& e : fresh.entries()) {
    INFO(e.sig.key());
    const OpProfileEntry* s = shipped.find(e.sig);
    REQUIRE(s);
    CHECK(s->us.count == e.us.count);
    CHECK(s->us.mean == Approx(e.us.mean).epsilon(1e-12));
    CHECK(s->us.min == e.us.min);
    CHECK(s->us.max == e.us.max);
  }
}
