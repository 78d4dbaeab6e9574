// The kernel-time source (issue #19): the shape-aware model's closed forms, the measured tables
// (exact, interpolated, derived) and the fallbacks. Oracles: the model's own formulas, numbers in
// the public tables (vidur, vTrain), and the rule that only what a table reaches is corrected.
#include <catch2/catch.hpp>

#include <cmath>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/kernel_model.h"
#include "hwmodels/kernel_table.h"
#include "traces/op_profile.h"
#include "traces/error.h"

using namespace protwin::hw;

namespace {

Machine without_tables(const std::string& name) {
  Machine m = load_machine(name);
  m.kernel_tables.enabled = false;
  return m;
}

}  // namespace

TEST_CASE("shape-aware GEMM: a skinny GEMM is the HBM roofline plus the floor", "[hwmodels][kernel]") {
  const Machine m = without_tables("dgx-a100");
  // 16 tokens through a 4096 x 12288 weight: the weight's 100 MB through HBM dominate.
  const double bytes = (16.0 * 4096 + 4096.0 * 12288 + 16.0 * 12288) * 2;
  CHECK(gemm_model_seconds(m, 1, 16, 12288, 4096, "fp16") ==
        Approx(m.gpu.kernel_floor_us * 1e-6 + bytes / (m.gpu.hbm_achievable_GBps * 1e9)).epsilon(1e-9));
}

TEST_CASE("shape-aware GEMM: a large square GEMM runs at the sustained rate up to its last wave", "[hwmodels][kernel]") {
  const Machine m = without_tables("dgx-a100");
  const double flops = 2.0 * 8192 * 8192 * 8192;
  const double ideal = flops / (m.gpu.compute.at("fp16").sustained_tflops * 1e12);
  // 256x128 tiles: 2048 of them over 108 SMs is 18.96 waves, run as 19.
  const double t = gemm_model_seconds(m, 1, 8192, 8192, 8192, "fp16");
  CHECK(t == Approx(ideal * 19 / (2048.0 / 108) + m.gpu.kernel_floor_us * 1e-6).epsilon(1e-6));
  // One tile more than the SMs take in one wave: 109 tiles of 256x128 cannot run as 108 do; the
  // best other tiling (64x64, 9 waves) is slower than one full wave of 256x128 (here at the HBM roofline).
  const double one = gemm_model_seconds(m, 1, 256 * 108, 128, 8192, "fp16");
  const double more = gemm_model_seconds(m, 1, 256 * 109, 128, 8192, "fp16");
  CHECK(more > 1.1 * one);
  CHECK_THROWS_WITH(gemm_model_seconds(m, 1, 0, 4, 4, "fp16"), Catch::Contains(">= 1"));
  CHECK_THROWS_WITH(gemm_model_seconds(m, 1, 4, 4, 4, "fp8"), Catch::Contains("fp8"));
}

TEST_CASE("memory-bound kernels: floor + bytes / achievable HBM", "[hwmodels][kernel]") {
  const Machine m = without_tables("hgx-h100");
  CHECK(memory_model_seconds(m, 1e9) == Approx(m.gpu.kernel_floor_us * 1e-6 + 1e9 / (m.gpu.hbm_achievable_GBps * 1e9)));
}

TEST_CASE("a kernel the table has is priced at its measured time", "[hwmodels][kernel]") {
  const HardwareCostModel cm(load_machine("dgx-a100"));
  // vidur A100, Llama-2-7B QKV at 16 tokens, TP 1: 0.0646 ms (data/profiling/.../mlp.csv).
  const KernelTime t = cm.gemm_time(1, 16, 12288, 4096, "fp16");
  CHECK(t.source == KernelSource::kMeasured);
  CHECK(t.seconds == Approx(64.6e-6).epsilon(1e-6));
  // bf16 has no table: the fp16 corrections (same tensor cores) price it.
  const KernelTime b = cm.gemm_time(1, 16, 12288, 4096, "bf16");
  CHECK(b.source == KernelSource::kInterpolated);
  CHECK(b.seconds == Approx(64.6e-6).epsilon(0.1));
}

TEST_CASE("between measured shapes the correction is interpolated, far from all, the model alone", "[hwmodels][kernel]") {
  const HardwareCostModel cm(load_machine("dgx-a100"));
  const HardwareCostModel model(without_tables("dgx-a100"));
  // 20 tokens lies between the table's 16 (64.6 us) and 24 (64.2 us) tokens.
  const KernelTime mid = cm.gemm_time(1, 20, 12288, 4096, "fp16");
  CHECK(mid.source == KernelSource::kInterpolated);
  CHECK(mid.seconds >= 64.2e-6 * 0.98);
  CHECK(mid.seconds <= 64.6e-6 * 1.02);
  // A GEMM no table comes within an octave of.
  const KernelTime far = cm.gemm_time(1, 3, 5, 7, "fp16");
  CHECK(far.source == KernelSource::kModel);
  CHECK(far.seconds == model.gemm_time(1, 3, 5, 7, "fp16").seconds);
  CHECK(model.gemm_time(1, 16, 12288, 4096, "fp16").source == KernelSource::kModel);
}

TEST_CASE("collectives: two measured tables of one size give their geometric mean", "[hwmodels][kernel]") {
  const HardwareCostModel cm(load_machine("dgx-a100"));
  // 16 MiB all-reduce over 8 A100s of one node: vTrain's nccl-tests 232.4 us, vidur 274.17 us.
  const KernelTime t = cm.collective_time("all_reduce", 16777216, 8, 8);
  CHECK(t.source == KernelSource::kMeasured);
  CHECK(t.seconds == Approx(std::sqrt(232.4e-6 * 274.1666667e-6)).epsilon(1e-4));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, 16777216, 8, CollectiveScope::kIntraNode).seconds ==
        Approx(t.seconds));
  // Beyond every table: alpha-beta.
  const HardwareCostModel model(without_tables("dgx-a100"));
  CHECK(cm.collective_time("all_reduce", 64.0 * (1LL << 30), 8, 8).source == KernelSource::kModel);
  CHECK_THROWS_WITH(cm.collective_time("all_to_all", 1024, 8, 8), Catch::Contains("all_to_all"));
}

TEST_CASE("tables measured on another GPU carry over their shape effects only", "[hwmodels][kernel]") {
  const HardwareCostModel cm(load_machine("rtx3090-server"));
  const HardwareCostModel model(without_tables("rtx3090-server"));
  const KernelTime big = cm.gemm_time(1, 8192, 8192, 8192, "fp16");
  CHECK(big.source == KernelSource::kDerived);
  // The largest GEMMs keep the 3090's own measured rate (the corrections are relative to them).
  CHECK(big.seconds == Approx(model.gemm_time(1, 8192, 8192, 8192, "fp16").seconds).epsilon(0.05));
}

TEST_CASE("the sources in order: profile, tables, model, and machines without SMs keep the curves", "[hwmodels][kernel]") {
  const protwin::traces::Kernel k{{"gemm", {16, 12288, 4096}, "fp16"}, 1, 2.0 * 16 * 12288 * 4096, 0};
  const HardwareCostModel profiled(load_machine("dgx-a100"), [](const protwin::traces::OpSignature& s) {
    return s.kind == "gemm" ? std::optional<double>(1e-3) : std::nullopt;
  });
  CHECK(profiled.kernel_time(k).source == KernelSource::kProfile);
  CHECK(profiled.kernel_time(k).seconds == 1e-3);
  const HardwareCostModel cm(load_machine("dgx-a100"));
  CHECK(cm.kernel_time(k).seconds == cm.kernel_time(k).seconds);  // memoised, the same
  CHECK(cm.kernel_time(k).source == KernelSource::kMeasured);
  const HardwareCostModel host(load_machine("host-emulated"));
  CHECK(host.kernel_time({{"gemm", {64, 64, 64}, "fp32"}, 1, 0, 0}).source == KernelSource::kCurve);
}

TEST_CASE("a machine naming a table that does not exist is refused", "[hwmodels][kernel]") {
  CHECK_THROWS_WITH(HardwareCostModel(load_machine("dgx-a100", {"kernel_tables.names.0=nope"})),
                    Catch::Contains("/kernel_tables/names") && Catch::Contains("nope"));
}

TEST_CASE("unfused attention is its batched GEMMs only: the softmax is charged once, as its own kernel",
          "[hwmodels][kernel]") {
  // Every workload emits the softmax (and its backward) as a kernel of its own next to the
  // "attention" kernel, so the attention kernel must not price a pass over the scores again.
  const std::vector<int64_t> shape = {32, 1024, 1024, 64};  // b*a, s_q, s_k, d
  {
    const HardwareCostModel cost(load_machine("dgx-a100"));  // shape-aware model
    const double fwd = cost.gemm_time(32, 1024, 1024, 64, "fp16").seconds + cost.gemm_time(32, 1024, 64, 1024, "fp16").seconds;
    const double bwd = fwd + 2 * cost.gemm_time(32, 1024, 64, 1024, "fp16").seconds;
    protwin::traces::Kernel k;
    k.sig = {"attention", shape, "fp16"};
    CHECK(cost.kernel_time(k, false).seconds == Approx(fwd).epsilon(1e-12));
    CHECK(cost.kernel_time(k, true).seconds == Approx(bwd).epsilon(1e-12));
  }
  {
    const HardwareCostModel cost(load_machine("host-emulated"));  // curves (no SMs)
    const double gemm_flops = 2.0 * 32 * 1024 * 1024 * 64;
    const double gemm_bytes = 32.0 * (1024 * 64 + 1024 * 64 + 1024 * 1024) * 4;
    protwin::traces::Kernel call;  // one batched GEMM call of these flops and bytes (no {m,n,k} shape)
    call.sig = {"gemm", {32}, "fp32"};
    call.flops = gemm_flops;
    call.bytes = gemm_bytes;
    const double t = cost.kernel_time(call, false).seconds;
    CHECK(cost.attention_seconds(shape, "fp32", false, false) == Approx(2 * t).epsilon(1e-12));
    CHECK(cost.attention_seconds(shape, "fp32", false, true) == Approx(4 * t).epsilon(1e-12));
  }
}

namespace {

// A two-point fp16 GEMM table on a toy GPU whose model is flops / 100 TFLOPS (every GEMM in the
// flat regime) except below 2^30 flops, where it runs at half that (not flat).
const char* kFlatTable = R"({"format": "protwin.profile", "version": 1, "device": "toy",
 "provenance": {"kind": "assumed", "source": "test"}, "ops": [
 {"kind": "gemm", "dtype": "fp16", "shape": [4096, 4096, 4096], "key": "gemm:fp16:4096x4096x4096", "count": 1, "source": "test",
  "mean_us": 1718.0, "min_us": 1718.0, "max_us": 1718.0, "std_us": 0},
 {"kind": "gemm", "dtype": "fp16", "shape": [4096, 16384, 4096], "key": "gemm:fp16:4096x16384x4096", "count": 1, "source": "test",
  "mean_us": 6000.0, "min_us": 6000.0, "max_us": 6000.0, "std_us": 0}]})";

double toy_seconds(const protwin::traces::OpSignature& s) {
  double flops = 2;
  for (int64_t d : s.shape) flops *= static_cast<double>(d);
  const double rate = (s.dtype == "bf16" ? 110e12 : 100e12) * (flops < 1073741824.0 ? 0.5 : 1.0);
  return flops / rate;
}

// reach: how far a flat-regime point reaches (log2 distance); the default has no cut-off.
KernelTable toy_table(bool flat_regime, double reach = 2.0) {
  static const protwin::traces::OpProfile profile = protwin::traces::OpProfile::parse(kFlatTable, "toy.json");
  KernelGemmModel g;
  g.seconds = toy_seconds;
  g.sustained_flops = [](const std::string& dtype) { return dtype == "bf16" ? 110e12 : 100e12; };
  g.flat_regime = flat_regime;
  g.flat_reach = reach;
  return KernelTable({&profile}, [](const protwin::traces::OpSignature& s, double) { return toy_seconds(s); },
                     KernelTable::Carry::kAbsolute, g);
}

}  // namespace

TEST_CASE("flat regime: beyond every point, the nearby flat points' correction, weighted by 1/d^2 in log2 space",
          "[hwmodels][kernel][closed-form]") {
  const KernelTable t = toy_table(true);
  const auto gemm = [](int64_t m, int64_t n, int64_t k, const char* dtype = "fp16") {
    return protwin::traces::OpSignature{"gemm", {m, n, k}, dtype};
  };
  const double r1 = std::log(1718e-6 / toy_seconds(gemm(4096, 4096, 4096)));
  const double r2 = std::log(6000e-6 / toy_seconds(gemm(4096, 16384, 4096)));
  // 32768 tokens (3 octaves beyond both points' 4096): no distance in tokens; n = 8192 is one octave
  // from each point: equal weights.
  auto c = t.correction(gemm(32768, 8192, 4096), 0);
  REQUIRE(c);
  CHECK(c->extrapolated);
  CHECK_FALSE(c->exact);
  CHECK(c->ratio == Approx(std::exp((r1 + r2) / 2)).epsilon(1e-12));
  // n = 2048: 1 octave from the first point, 3 from the second (beyond the 2-octave reach).
  c = t.correction(gemm(16384, 2048, 4096), 0);
  REQUIRE(c);
  CHECK(c->ratio == Approx(std::exp(r1)).epsilon(1e-12));
  // Fewer tokens than the points count: 16384 x 8192 x 4096 at 1024 tokens is 2 octaves below in m,
  // 1 in n: d^2 = 5 > 4, out of reach; and a GEMM off the flat regime is never extrapolated.
  CHECK_FALSE(t.correction(gemm(1024, 8192, 4096), 0));
  CHECK_FALSE(t.correction(gemm(512, 256, 2048), 0));
  // Within an octave of a point: the ordinary interpolation, not the flat-regime one.
  c = t.correction(gemm(6000, 4096, 4096), 0);
  REQUIRE(c);
  CHECK_FALSE(c->extrapolated);
  // The machine switch turns the extrapolation off.
  CHECK_FALSE(toy_table(false).correction(gemm(32768, 8192, 4096), 0));
  // Without a cut-off (the default) the far point counts too, at 1/d^2: 1 and 1/9.
  c = toy_table(true, KernelGemmModel{}.flat_reach).correction(gemm(16384, 2048, 4096), 0);
  REQUIRE(c);
  CHECK(c->ratio == Approx(std::exp((r1 + r2 / 9) / (1 + 1.0 / 9))).epsilon(1e-12));
}

TEST_CASE("a bf16 GEMM is priced at the fp16 table's measured time (same tensor cores)", "[hwmodels][kernel][closed-form]") {
  const KernelTable t = toy_table(true);
  const protwin::traces::OpSignature bf16{"gemm", {4096, 4096, 4096}, "bf16"};
  const auto c = t.correction(bf16, 0);
  REQUIRE(c);
  CHECK_FALSE(c->exact);
  CHECK(toy_seconds(bf16) * c->ratio == Approx(1718e-6).epsilon(1e-12));
}

TEST_CASE("A100-SXM4 40 GB prices GEMMs with the DGX A100's tables absolutely, memory-bound kernels by shape only",
          "[hwmodels][kernel]") {
  const HardwareCostModel dgx(load_machine("dgx-a100"));
  const HardwareCostModel abci(load_machine("abci-a100"));
  // Same SMs and dense peaks: a measured GEMM costs the same on both (the model's HBM roofline does
  // not bind at this size).
  const KernelTime a = abci.gemm_time(1, 4096, 12288, 4096, "fp16"), d = dgx.gemm_time(1, 4096, 12288, 4096, "fp16");
  CHECK(a.source == KernelSource::kDerived);
  CHECK(a.seconds == Approx(d.seconds).epsilon(1e-9));
  // The 3090 (82 SMs) keeps shape effects only: its own sustained rate for large GEMMs.
  const HardwareCostModel rtx(load_machine("rtx3090-server"));
  const HardwareCostModel rtx_model(without_tables("rtx3090-server"));
  CHECK(rtx.gemm_time(1, 32768, 8192, 4096, "fp16").seconds ==
        Approx(rtx_model.gemm_time(1, 32768, 8192, 4096, "fp16").seconds).epsilon(1e-9));
}

TEST_CASE("memory-bound kernels beyond the table's largest take its largest kernels' correction",
          "[hwmodels][kernel][closed-form]") {
  // Two elementwise points, 1 MB (2x the model's time) and 64 MB (0.9x); a 1-byte-per-ns model.
  static const protwin::traces::OpProfile profile = protwin::traces::OpProfile::parse(R"({"format": "protwin.profile", "version": 1, "device": "toy",
 "provenance": {"kind": "assumed", "source": "test"}, "ops": [
 {"kind": "elementwise", "dtype": "fp16", "shape": [349525], "key": "elementwise:fp16:349525", "count": 1, "source": "test",
  "bytes": 1048576, "mean_us": 2097.152, "min_us": 2097.152, "max_us": 2097.152, "std_us": 0},
 {"kind": "elementwise", "dtype": "fp16", "shape": [22369621], "key": "elementwise:fp16:22369621", "count": 1, "source": "test",
  "bytes": 67108864, "mean_us": 60397.9776, "min_us": 60397.9776, "max_us": 60397.9776, "std_us": 0}]})", "toy.json");
  const auto model = [](const protwin::traces::OpSignature&, double bytes) { return bytes * 1e-9; };
  KernelGemmModel g;
  const KernelTable t({&profile}, model, KernelTable::Carry::kAbsolute, g);
  const protwin::traces::OpSignature softmax{"softmax", {1}, "fp16"};  // falls back to elementwise
  // 1 GB: 4 octaves beyond the largest point: its correction, 0.9.
  auto c = t.correction(softmax, 1073741824.0);
  REQUIRE(c);
  CHECK(c->extrapolated);
  CHECK(c->ratio == Approx(0.9).epsilon(1e-9));
  // 8 MB: inside the table's range, three octaves from both points: the model alone.
  CHECK_FALSE(t.correction(softmax, 8388608.0));
  // 256 KB: below the smallest point, beyond its reach: the model alone (its floor is the model's).
  CHECK_FALSE(t.correction(softmax, 262144.0));
  // The machine switch (kernel_tables.memory_regime) turns it off; the GEMMs' one does not.
  g.flat_regime = false;
  CHECK(KernelTable({&profile}, model, KernelTable::Carry::kAbsolute, g).correction(softmax, 1073741824.0));
  g.memory_regime = false;
  CHECK_FALSE(KernelTable({&profile}, model, KernelTable::Carry::kAbsolute, g).correction(softmax, 1073741824.0));
}

TEST_CASE("unfused attention's batched GEMMs are priced at NeuSight's measured fp32 bmm", "[hwmodels][kernel]") {
  // NeuSight @ 6945927 test/bmm.csv, A100 80GB PCIe: torch.bmm of [80, 1024, 1024] and [80, 1024, 64]
  // (its B, M, N = reduction, K = 80, 1024, 1024, 64) took 1.2134080 ms; protwin's bmm {B, M, N, K}
  // is that GEMM's {80, 1024 rows, 64 columns, 1024 inner}. The model alone says about half.
  const HardwareCostModel cm(load_machine("a100-80g-pcie-server"));
  const KernelTime pv = cm.gemm_time(80, 1024, 64, 1024, "fp32");
  CHECK(pv.source == KernelSource::kMeasured);
  CHECK(pv.seconds == Approx(1213.4080330530803e-6).epsilon(1e-9));
  const HardwareCostModel model(without_tables("a100-80g-pcie-server"));
  CHECK(model.gemm_time(80, 1024, 64, 1024, "fp32").seconds < 0.6 * pv.seconds);
  // The QK^T one (1024 x 1024 out, reduction 64): NeuSight's B, M, N, K = 80, 1024, 64, 1024, 0.6773 ms.
  CHECK(cm.gemm_time(80, 1024, 1024, 64, "fp32").seconds == Approx(677.3119966189066e-6).epsilon(1e-9));
}
