// OpProfile: file format, lookups, merging (oracle: statistics of the concatenated samples) and
// bad files (exact messages).
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "traces/error.h"
#include "traces/op_profile.h"

using namespace protwin::traces;

namespace {

OpProfileEntry entry(OpSignature sig, const std::vector<double>& samples, std::string source = "test") {
  OpProfileEntry e;
  e.sig = std::move(sig);
  for (double x : samples) e.us.add(x);
  e.source = std::move(source);
  return e;
}

std::string error_of_text(const std::string& text) {
  try {
    OpProfile::parse(text, "p.json");
  } catch (const protwin::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A valid one-op profile with `op_fields` spliced into its op.
std::string profile_text(const std::string& op_fields,
                         const std::string& provenance = R"({"kind": "measured", "source": "s"})") {
  return R"({"format": "protwin.profile", "version": 1, "device": "d", "provenance": )" + provenance +
         R"(, "ops": [{"key": "gemm:fp16:2x3x4", "kind": "gemm", "shape": [2, 3, 4], "dtype": "fp16", )"
         R"("count": 2, "mean_us": 10, "min_us": 9, "max_us": 11, "std_us": 1, "source": "s")" +
         op_fields + "}]}";
}

}  // namespace

TEST_CASE("OpTimeStats equals the closed-form statistics of its samples", "[profile]") {
  const std::vector<double> xs = {3969, 3722, 3844, 3979, 3619};
  OpTimeStats st;
  for (double x : xs) st.add(x);
  double sum = 0;
  for (double x : xs) sum += x;
  const double mean = sum / 5;
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  CHECK(st.count == 5);
  CHECK(st.mean == Approx(mean).epsilon(1e-14));
  CHECK(st.stddev() == Approx(std::sqrt(var / 5)).epsilon(1e-12));
  CHECK(st.min == 3619);
  CHECK(st.max == 3979);
}

TEST_CASE("merge pools statistics exactly as if the samples had been recorded together", "[profile]") {
  const OpSignature g{"gemm", {4096, 4096, 4096}, "bf16"};
  const OpSignature c{"h2d", {1048576}, "int8"};
  OpProfile a("dev", "measured", "run a"), b("dev", "measured", "run b");
  a.add(entry(g, {100, 110, 130}, "run a"));
  b.add(entry(g, {90, 200}, "run b"));
  b.add(entry(c, {50}, "run b"));
  a.merge(b);

  OpTimeStats all;
  for (double x : {100.0, 110.0, 130.0, 90.0, 200.0}) all.add(x);
  const OpProfileEntry* e = a.find(g);
  REQUIRE(e);
  CHECK(e->us.count == 5);
  CHECK(e->us.mean == Approx(126.0));
  CHECK(e->us.stddev() == Approx(all.stddev()));
  CHECK(e->us.min == 90);
  CHECK(e->us.max == 200);
  CHECK(e->source == "run a; run b");
  REQUIRE(a.find(c));
  CHECK(a.find(c)->provenance == "measured");  // carried over from b's file-level kind
  CHECK(a.size() == 2);
}

TEST_CASE("lookup returns the mean in seconds, and nothing for unknown ops", "[profile]") {
  OpProfile p("dev", "derived", "test");
  p.add(entry({"gemm", {8192, 8192, 8192}, "fp16"}, {4250.0}));
  REQUIRE(p.lookup({"gemm", {8192, 8192, 8192}, "fp16"}));
  CHECK(*p.lookup({"gemm", {8192, 8192, 8192}, "fp16"}) == Approx(4250e-6));
  CHECK_FALSE(p.lookup({"gemm", {8192, 8192, 8192}, "bf16"}));
  CHECK_FALSE(p.lookup({"gemm", {8192, 8192}, "fp16"}));
}

TEST_CASE("save then load gives the same profile, byte for byte", "[profile]") {
  OpProfile p("NVIDIA Test GPU", "measured", "unit test");
  OpProfileEntry e = entry({"h2d", {45842432}, "int8"}, {3969, 3722});
  e.bytes = 45842432;
  e.extra["names"] = {"Memcpy HtoD (Pinned -> Device)"};
  p.add(e);
  p.add(entry({"cpu:aten::mm", {2, 64, 4096, 2, 4096, 100}, "fp32"}, {12.5}));
  const std::string path = std::string(PROTWIN_BINARY_DIR) + "/traces_profiles_roundtrip.json";
  p.save(path);
  const OpProfile q = OpProfile::load(path);
  CHECK(q.to_json() == p.to_json());
  CHECK(q.device() == "NVIDIA Test GPU");
  REQUIRE(q.find("h2d:int8:45842432"));
  CHECK(*q.find("h2d:int8:45842432")->bytes == 45842432);
  CHECK(q.find("h2d:int8:45842432")->extra.at("names")[0] == "Memcpy HtoD (Pinned -> Device)");
  CHECK(q.find("h2d:int8:45842432")->us.stddev() == Approx(123.5));
}

TEST_CASE("bad profiles fail with file, JSON pointer and what was expected", "[profile]") {
  CHECK(error_of_text(profile_text("")) == "(no error)");
  CHECK(error_of_text(R"({"format": "protwin.plan", "version": 1})") ==
        "p.json:/format: expected \"protwin.profile\", got \"protwin.plan\"");
  CHECK(error_of_text(R"({"format": "protwin.profile", "version": 2})") ==
        "p.json:/version: unsupported op profile version 2 (this protwin reads version 1)");
  CHECK(error_of_text(profile_text("", R"({"kind": "guessed", "source": "s"})")) ==
        "p.json:/provenance/kind: expected one of peak, measured, proxy, derived, assumed, got \"guessed\"");
  // The measured slowdowns the simulator applies are ratios of times; other contention figures may be 0.
  const std::string contention = R"({"kind": "measured", "source": "s", "contention": {"collective_thread_cpu_share": 0, )";
  CHECK(error_of_text(profile_text("", contention + R"("compute_slowdown_with_copies": 0}})")) ==
        "p.json:/provenance/contention/compute_slowdown_with_copies: expected a number > 0, got integer 0");
  CHECK(error_of_text(profile_text("", contention + R"("adam_slowdown_with_compute": 1.9}})")) == "(no error)");
  CHECK(error_of_text(profile_text(", \"provenance\": \"meas\"")) ==
        "p.json:/ops/0/provenance: expected one of peak, measured, proxy, derived, assumed, got \"meas\"");
  CHECK(error_of_text(profile_text(", \"bytes\": -1")) ==
        "p.json:/ops/0/bytes: expected a number >= 0, got integer -1");

  std::string t = profile_text("");
  SECTION("key does not match the signature") {
    t.replace(t.find("gemm:fp16:2x3x4"), 15, "gemm:fp16:2x3x5");
    CHECK(error_of_text(t) ==
          "p.json:/ops/0/key: \"gemm:fp16:2x3x5\" does not match kind, dtype and shape (expected "
          "\"gemm:fp16:2x3x4\")");
  }
  SECTION("unknown dtype") {
    t.replace(t.find("fp16:"), 4, "fp61");
    t.replace(t.find("\"fp16\""), 6, "\"fp61\"");
    CHECK(error_of_text(t) ==
          "p.json:/ops/0/dtype: expected one of fp32, fp16, bf16, fp64, fp8, int64, int32, int8, uint8, "
          "bool, unknown, got \"fp61\"");
  }
  SECTION("min above mean") {
    t.replace(t.find("\"min_us\": 9"), 11, "\"min_us\": 12");
    CHECK(error_of_text(t) == "p.json:/ops/0: expected min_us <= mean_us <= max_us, got 12.000000, "
                              "10.000000, 11.000000");
  }
  SECTION("zero count") {
    t.replace(t.find("\"count\": 2"), 10, "\"count\": 0");
    CHECK(error_of_text(t) == "p.json:/ops/0/count: expected an integer >= 1, got 0");
  }
  SECTION("negative shape") {
    t.replace(t.find("[2, 3, 4]"), 9, "[2, -3, 4]");
    CHECK(error_of_text(t) == "p.json:/ops/0/shape/1: expected an integer >= 0, got -3");
  }
  SECTION("missing source") {
    t.replace(t.find(", \"source\": \"s\"}]"), 15, "");
    CHECK(error_of_text(t) == "p.json:/ops/0: missing required field \"source\"");
  }
  SECTION("duplicate key") {
    const auto op_begin = t.find("{\"key\"");
    const auto op_end = t.rfind("}]");
    const std::string op = t.substr(op_begin, op_end + 1 - op_begin);
    t.insert(op_end + 1, ", " + op);
    CHECK(error_of_text(t) == "p.json:/ops/1/key: duplicate key \"gemm:fp16:2x3x4\" (first at /ops/0)");
  }
}
