// Importers of public kernel tables (traces/table_import.h) on small excerpts of the real files
// (tests/data/kernel_tables/, see its README). Oracles: the numbers in the excerpts themselves, the
// closed-form shapes of a LLaMA layer's ops, pooled means of merged rows.
#include <catch2/catch.hpp>

#include "traces/error.h"
#include "traces/table_import.h"

using protwin::traces::import_table;
using protwin::traces::TableImportOptions;

namespace {

const std::string kDir = std::string(PROTWIN_SOURCE_DIR) + "/tests/data/kernel_tables/";

TableImportOptions opts(const std::string& format) {
  TableImportOptions o;
  o.format = format;
  return o;
}

}  // namespace

TEST_CASE("vidur compute rows become the layer's GEMMs and passes with their shapes", "[traces][table_import]") {
  const auto p = import_table({kDir + "vidur_a100_llama-2-7b_mlp.csv"}, opts("vidur"));
  // Llama-2-7B: h 4096, 32 heads (kv 32), ffn 11008, gated; row 1 = 4096 tokens at TP 1.
  const auto* qkv = p.find("gemm:fp16:4096x12288x4096");  // (a + 2 kv) d = 3 h
  REQUIRE(qkv);
  CHECK(qkv->us.mean == Approx(1857.35));
  CHECK(qkv->source == "microsoft/vidur");
  CHECK(qkv->extra["file"] == "vidur_a100_llama-2-7b_mlp.csv");
  CHECK(qkv->extra["row"] == 1);
  const auto* up = p.find("gemm:fp16:4096x22016x4096");  // gate + up: 2 f
  REQUIRE(up);
  CHECK(up->us.mean == Approx(3279.45));
  REQUIRE(p.find("gemm:fp16:4096x4096x11008"));  // down
  REQUIRE(p.find("rmsnorm:fp16:16777216"));
  REQUIRE(p.find("swiglu:fp16:45088768"));  // 4096 x 11008
  // TP 2 (rows 4 and 5, the same shapes twice): QKV split over 2 GPUs, the two rows pooled.
  const auto* qkv2 = p.find("gemm:fp16:4096x6144x4096");
  REQUIRE(qkv2);
  CHECK(qkv2->us.count == 2);
  CHECK(qkv2->us.mean == Approx((933.55 + 923.2) / 2));
  // The residual add has the same shape at TP 1 and 2: rows 1, 4, 5 pooled; it moves 3 x 2 B per element.
  const auto* add = p.find("elementwise:fp16:16777216");
  REQUIRE(add);
  CHECK(add->us.count == 3);
  CHECK(add->us.mean == Approx((55.0 + 55.85 + 56.0) / 3));
  CHECK(*add->bytes == Approx(3.0 * 2 * 16777216));
}

TEST_CASE("per_octave thins a series to sizes an octave apart, keeping the largest", "[traces][table_import]") {
  TableImportOptions o = opts("vidur");
  o.per_octave = 1;
  const auto p = import_table({kDir + "vidur_a100_llama-2-7b_mlp.csv"}, o);
  CHECK(p.find("gemm:fp16:16x12288x4096"));
  CHECK_FALSE(p.find("gemm:fp16:24x12288x4096"));  // 24 < 2 x 16
  CHECK(p.find("gemm:fp16:4096x12288x4096"));
}

TEST_CASE("vidur network rows are collectives by bytes, ranks and ranks per node", "[traces][table_import]") {
  const auto p = import_table({kDir + "vidur_a100_dgx_all_reduce.csv"}, opts("vidur"));
  const auto* ar = p.find("all_reduce:int8:16777216x8x8");
  REQUIRE(ar);
  CHECK(ar->us.count == 2);
  CHECK(ar->us.mean == Approx((273.6666667 + 274.6666667) / 2));
  CHECK(p.find("all_reduce:int8:2048x2x1"));  // 2 workers, one per node
}

TEST_CASE("NeuSight rows keep their kernel and can be filtered by GPU", "[traces][table_import]") {
  TableImportOptions o = opts("neusight");
  o.device = "NVIDIA A100-PCIE-40GB";
  const auto p = import_table({kDir + "neusight_linear.csv", kDir + "neusight_elem.csv"}, o);
  const auto* g = p.find("gemm:fp32:1024x2560x2560");
  REQUIRE(g);
  CHECK(g->us.mean == Approx(779.6693245569865));
  CHECK(g->extra["kernel"] == "ampere_sgemm_128x64_tn");
  int gemms = 0;
  for (const auto& e : p.entries()) gemms += e.sig.kind == "gemm";
  CHECK(gemms == 3);  // the L4 row is left out
  const auto* add = p.find("elementwise.add:fp32:52428800");  // B 32768 x H 1600
  REQUIRE(add);
  CHECK(*add->bytes == Approx(3.0 * 4 * 52428800));
}

TEST_CASE("LLMCompass matmul rows and nccl-tests tables", "[traces][table_import]") {
  const auto m = import_table({kDir + "matmul_A100.csv"}, opts("llmcompass"));
  REQUIRE(m.find("gemm:fp16:64x12288x12288"));
  CHECK(m.find("gemm:fp16:64x12288x12288")->us.mean == Approx(190.0));
  CHECK(m.find("gemm:fp16:8192x64x64")->us.mean == Approx(29.6));
  const auto n = import_table({kDir + "AR_GPU8_1M_1024M_LUT.csv"}, opts("nccl-tests"));
  const auto* ar = n.find("all_reduce:int8:1048576x8x8");  // 8 ranks from the file name
  REQUIRE(ar);
  CHECK(ar->us.mean == Approx(92.79));
  CHECK(n.find("all_reduce:int8:16777216x8x8")->us.mean == Approx(232.4));
}

TEST_CASE("import_table refuses bad input naming the flag, file and row", "[traces][table_import]") {
  CHECK_THROWS_WITH(import_table({kDir + "matmul_A100.csv"}, opts("csv")), Catch::Contains("--format"));
  TableImportOptions o = opts("nccl-tests");
  CHECK_THROWS_WITH(import_table({kDir + "matmul_A100.csv"}, o), Catch::Contains("--ranks"));
  o.ranks = 8;
  CHECK_THROWS_WITH(import_table({kDir + "matmul_A100.csv"}, o), Catch::Contains("size(B)"));
  TableImportOptions n = opts("neusight");
  n.device = "NVIDIA B200";
  CHECK_THROWS_WITH(import_table({kDir + "neusight_linear.csv"}, n), Catch::Contains("NVIDIA B200"));
  CHECK_THROWS_WITH(import_table({kDir + "vidur_a100_dgx_all_reduce.csv"}, opts("llmcompass")),
                    Catch::Contains("vidur_a100_dgx_all_reduce.csv") && Catch::Contains("row 1"));
}
