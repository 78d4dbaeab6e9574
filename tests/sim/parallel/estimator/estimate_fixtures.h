// Shared inputs for the estimator tests: Llama-3.1-8B as in REFERENCE §3 (h 4096, h_ffn 14336,
// L 32, a 32, k 8, V 128256, untied) and the authors' unit-test layout helper.
#pragma once

#include "sim/parallel/estimator/memory_estimate.h"

namespace protwin::sim::test {
using namespace parallel;  // the estimator's types (sim/parallel/estimator)

// A spec with the family's defaults (traces/model_spec.cpp), dimensions to be set by the test.
inline ModelSpec llama_spec() { return traces::model_from_json({{"family", "llama"}, {"hidden", 1}, {"layers", 1}, {"heads", 1}}, "test"); }
inline ModelSpec gpt_spec() { return traces::model_from_json({{"family", "gpt2"}, {"hidden", 1}, {"layers", 1}, {"heads", 1}}, "test"); }

inline ModelSpec llama31_8b() {
  ModelSpec m = llama_spec();
  m.name = "llama3.1-8b";
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.layers = 32;
  m.heads = 32;
  m.kv_heads = 8;
  m.vocab = 128256;
  return m;
}

inline ParallelConfig layout(int64_t seq, int64_t mbs, int64_t tp, int64_t cp, int64_t pp,
                             int64_t dp) {
  ParallelConfig c;
  c.seq = seq, c.mbs = mbs, c.tp = tp, c.cp = cp, c.pp = pp, c.dp = dp;
  return c;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kSbh = 8192.0 * 4096.0;  // s·b·h for s = 8192, b = 1, h = 4096

}  // namespace protwin::sim::test
