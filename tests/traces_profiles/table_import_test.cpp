// Importers of public kernel tables (traces/table_import.h) on small excerpts of the real files
// (tests/data/kernel_tables/, see its README). Oracles: the numbers in the excerpts themselves, the
// closed-form shapes of a LLaMA layer's ops, pooled means of merged rows.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

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
  // NeuSight's N is the reduction: nn.Linear(N=4096, K=1024) on 32768 rows writes 32768 x 1024,
  // which its kernel tiles as 8 x 512 CTAs of 128 x 64 (the row's grid): protwin's {m, n, k} =
  // {32768, 1024, 4096}, not {32768, 4096, 1024}.
  const auto* tall = p.find("gemm:fp32:32768x1024x4096");
  REQUIRE(tall);
  CHECK(tall->extra["grid"] == nlohmann::json::array({8, 512, 1}));
  CHECK_FALSE(p.find("gemm:fp32:32768x4096x1024"));
  CHECK(p.find("gemm:fp32:2048x50272x65536"));  // grid 393 x 64 of 128 x 32 tiles: 50272 x 2048 out
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

namespace {

using protwin::traces::TableBytes;

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A vidur compute table with one op (add) and the given layer sizes and token count.
std::string vidur_row(const std::string& hidden, const std::string& tokens, const std::string& mean_ms) {
  return "n_head,n_kv_head,n_embd,n_expanded_embd,num_tokens,num_tensor_parallel_workers,use_gated_mlp,"
         "time_stats.add.min,time_stats.add.max,time_stats.add.mean,time_stats.add.median,time_stats.add.std\n"
         "32,32," + hidden + ",11008," + tokens + ",1,True,0.01," + mean_ms + "," + mean_ms + ",0.01,0\n";
}

}  // namespace

TEST_CASE("import_table of bytes already read gives what the files give", "[traces][table_import]") {
  const auto from_files = import_table({kDir + "neusight_linear.csv"}, opts("neusight"));
  const auto from_bytes =
      import_table({TableBytes{kDir + "neusight_linear.csv", file_text(kDir + "neusight_linear.csv")}}, opts("neusight"));
  CHECK(from_bytes.to_json() == from_files.to_json());
  // The oracle of a row: vidur's add of 4096 x 128 tokens at 0.02 ms.
  const auto p = import_table({TableBytes{"v.csv", vidur_row("4096", "128", "0.02")}}, opts("vidur"));
  REQUIRE(p.find("elementwise:fp16:524288"));
  CHECK(p.find("elementwise:fp16:524288")->us.mean == Approx(20.0));
}

// Reproducers of what the table fuzzer (tests/fuzz/table_fuzz.cpp) and its review found; each
// input was accepted before, as a wrapped size, an infinite time or a profile that could not be
// written, and is now a user error naming the file and row or line.
TEST_CASE("import_table refuses sizes whose products overflow", "[traces][table_import][fuzz]") {
  // 9e15 tokens x 4096: the product wrapped (signed overflow) into a negative shape.
  CHECK_THROWS_WITH(import_table({TableBytes{"v.csv", vidur_row("4096", "9000000000000000", "0.02")}}, opts("vidur")),
                    Catch::Contains("v.csv: row 1: sizes too large"));
  CHECK_THROWS_WITH(import_table({TableBytes{"n.csv", "OPName,Latency,Device,Kernel Name,B,H\n"
                                                      "add,0.1,A100,k,4000000000000,4000000000000\n"}},
                                 opts("neusight")),
                    Catch::Contains("n.csv: row 1: sizes too large"));
}

TEST_CASE("import_table refuses a tensor-parallel degree that does not divide the layer", "[traces][table_import][fuzz]") {
  // 11008 / 20000 was 0: an mlp_up_proj GEMM of shape 16 x 0 x 4096 was imported silently.
  std::string v = vidur_row("4096", "16", "0.02");
  v.replace(v.find(",1,True"), 7, ",20000,True");
  CHECK_THROWS_WITH(import_table({TableBytes{"v.csv", v}}, opts("vidur")),
                    Catch::Contains("v.csv: row 1: num_tensor_parallel_workers 20000 must divide"));
}

TEST_CASE("import_table refuses infinite, huge and NUL-cut times", "[traces][table_import][fuzz]") {
  // LLMCompass's time was read with a bare strtod: "infms" became an infinite kernel time.
  CHECK_THROWS_WITH(import_table({TableBytes{"m.csv", "64, 128, 128, infms, 1Tflops\n"}}, opts("llmcompass")),
                    Catch::Contains("m.csv: row 1 field 4: expected a finite number, got \"infms\""));
  CHECK_THROWS_WITH(import_table({TableBytes{"m.csv", "64, 128, 128, 1e300ms, 1Tflops\n"}}, opts("llmcompass")),
                    Catch::Contains("m.csv: row 1") && Catch::Contains("below 1e9 ms"));
  CHECK_THROWS_WITH(import_table({TableBytes{"v.csv", vidur_row("4096", "128", "1e307")}}, opts("vidur")),
                    Catch::Contains("v.csv: row 1") && Catch::Contains("below 1e9 ms"));
  // A NUL byte ended the number early: "0.5\0xyz" was read as 0.5.
  const char nul[] = "64, 128, 128, 0.5\0xyzms, 1\n";
  CHECK_THROWS_WITH(import_table({TableBytes{"m.csv", std::string(nul, sizeof nul - 1)}}, opts("llmcompass")),
                    Catch::Contains("m.csv: row 1 field 4"));
}

TEST_CASE("import_table refuses text that is not UTF-8, which the profile's JSON cannot hold",
          "[traces][table_import][fuzz]") {
  // The op name went into the profile; writing it threw nlohmann's type_error (an internal error).
  CHECK_THROWS_WITH(import_table({TableBytes{"n.csv", "OPName,Latency,Device,Kernel Name,B,H\n"
                                                      "ad\xff,0.1,A100,k,4,4\n"}},
                                 opts("neusight")),
                    Catch::Contains("n.csv: line 2 byte 3: not UTF-8 text"));
  TableImportOptions o = opts("llmcompass");
  o.device = "A100\xc0\xaf";  // an overlong '/'
  CHECK_THROWS_WITH(import_table({TableBytes{"m.csv", "64, 128, 128, 0.5ms, 1\n"}}, o), Catch::Contains("--device"));
  CHECK_THROWS_WITH(import_table({TableBytes{"dir/m\xed\xa0\x80.csv", "64, 128, 128, 0.5ms, 1\n"}}, opts("llmcompass")),
                    Catch::Contains("is not UTF-8 text"));
}

TEST_CASE("import_table's UTF-8 check follows Unicode's table of well-formed sequences", "[traces][table_import]") {
  // An LLMCompass row with `text` as its fifth field (ignored by the importer, but kept in the file).
  auto row = [](const std::string& text) {
    return import_table({TableBytes{"m.csv", "64, 128, 128, 0.5ms, " + text + "\n"}}, opts("llmcompass"));
  };
  CHECK(row("plain, é, 中, 😀").size() == 1);
  CHECK(row("\xf4\x8f\xbf\xbf").size() == 1);  // U+10FFFF, the last code point
  auto refused_at = [&](const std::string& text, int byte) {
    CHECK_THROWS_WITH(row(text), Catch::Contains("m.csv: line 1 byte " + std::to_string(21 + byte) + ": not UTF-8"));
  };
  refused_at("ab\x80", 3);           // a lone continuation byte
  refused_at("a\xc1\xbf", 2);        // overlong 2-byte form
  refused_at("\xe0\x9f\xbf", 1);     // overlong 3-byte form
  refused_at("\xed\xa0\x80", 1);     // a surrogate (U+D800)
  refused_at("\xf4\x90\x80\x80", 1);  // past U+10FFFF
  refused_at("x\xe4\xb8", 2);        // cut short
}
