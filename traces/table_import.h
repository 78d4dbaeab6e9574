// Import of public measured kernel tables into an OpProfile (`protwin import-table`).
//
// Formats (one per source project; see /work/shared/data/gpu/README.md for where they come from):
//   vidur       microsoft/vidur profiling CSVs. Compute (mlp.csv, one LLaMA layer's forward ops by
//               num_tokens t and TP p, times in ms): attn_pre_proj gemm {t, (a+2kv)d/p, h},
//               attn_post_proj gemm {t, h, ad/p}, mlp_up_proj gemm {t, 2f/p, h} (gated) or {t, f/p, h},
//               mlp_down_proj gemm {t, h, f/p}, input/post_attention_layernorm rmsnorm {t h},
//               mlp_act swiglu {t f/p}, attn_rope rope {t (a+kv)d/p}, add elementwise {t h},
//               emb embedding {t h}; dtype fp16. Network (all_reduce.csv, send_recv.csv): kind
//               all_reduce / send_recv, shape {bytes, ranks, ranks_per_node}, dtype int8.
//   neusight    sitar-lab/NeuSight test CSVs (fp32, latency in ms; N is NeuSight's reduction
//               dimension): linear gemm {M, K, N} (B = 1), bmm {B, M, K, N}, elementwise ops elementwise.<op> {B H} (add, mul, divu, ...; gelu: gelu), ln
//               layernorm {B H}, softmax softmax {B H}; the kernel name, grid and block are kept.
//               Rows of every GPU unless `device` filters them (exact name, e.g. "NVIDIA H100 80GB HBM3").
//   llmcompass  PrincetonUniversity/LLMCompass matmul_A100.csv: "M, N, K, <ms>ms, <T>Tflops", fp16.
//   nccl-tests  nccl-tests output as a table (vTrain's LUTs): size(B), count, type, time(ns), busbw,
//               time(ns), busbw (out-of-place, then in-place); all_reduce {bytes, ranks, ranks}
//               (one node), from the out-of-place time; ranks from `ranks` or the file name
//               ("..._8gpu..." or "..._GPU8_...").
// Memory-bound entries record the bytes they move (read + write) in "bytes". Every entry keeps
// its provenance: "source" (the project, e.g. "microsoft/vidur@7d47513"), "file" (the file's
// name) and "row" (1-based data row; merged duplicates keep the first).
#pragma once

#include <string>
#include <vector>

#include "traces/op_profile.h"

namespace protwin::traces {

struct TableImportOptions {
  std::string format;         // vidur | neusight | llmcompass | nccl-tests
  std::string source;         // provenance source; default: the format's project
  std::string device;         // neusight: keep only this GPU's rows; else the profile's device name
  int ranks = 0;              // nccl-tests: ranks (0: from the file name)
  int per_octave = 0;         // thin each series (vidur: one file's rows at one TP degree, over
                              // num_tokens; collectives: one kind and group, over bytes; nccl-tests:
                              // one file) to sizes at least 2^(1/per_octave) apart, keeping powers
                              // of two and the largest (0: every row)
};

// Reads every file (.csv or .csv.gz; gzip detected from the content) into one profile.
// Errors name the file and row (and the column), or the option's flag.
OpProfile import_table(const std::vector<std::string>& paths, const TableImportOptions& opts);

// One table's bytes as read from its file (gzipped or not); `name` is the file's path, used in
// errors and provenance (nccl-tests: the ranks in it).
struct TableBytes {
  std::string name;
  std::string bytes;
};
// import_table on tables already read (the fuzz target's entry point).
OpProfile import_table(const std::vector<TableBytes>& tables, const TableImportOptions& opts);

}  // namespace protwin::traces
