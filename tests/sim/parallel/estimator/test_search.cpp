// The layout search against an independent brute force over the same space (the rules as written
// in REFERENCE §3 and the authors' optimal_setting_search.py), on a small model chosen so that
// every rejection reason occurs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim/parallel/search/parallel_search.h"
#include "tests/sim/parallel/estimator/estimate_fixtures.h"

using namespace protwin::sim;
using namespace protwin::sim::parallel;

namespace {

ModelSpec small_model() {
  ModelSpec m = test::llama_spec();
  m.name = "small";
  m.hidden = 768;
  m.ffn_hidden = 2048;
  m.layers = 12;     // divisors 1 2 3 4 6 12
  m.heads = 12;      // TP 8 breaks heads
  m.kv_heads = 2;    // TP 4 breaks KV heads
  m.vocab = 32000;
  return m;
}

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // tp cp pp mbs

struct Brute {
  std::map<std::string, int64_t> rejected;
  std::set<Key> fits, over;
  int64_t enumerated = 0;
};

Brute brute_force(const ModelSpec& m, int64_t gpus, int64_t per_node, int64_t seq, int64_t gbs,
                  double threshold_gib) {
  Brute out;
  for (int64_t tp : {1, 2, 4, 8})
    for (int64_t cp : {1, 2, 4, 8})
      for (int64_t pp = 1; pp <= m.layers; ++pp) {
        if (m.layers % pp) continue;
        if (tp * cp > per_node) { ++out.enumerated, ++out.rejected["tp_cp_per_node"]; continue; }
        if (gpus % (tp * cp * pp)) { ++out.enumerated, ++out.rejected["world_size"]; continue; }
        const int64_t dp = gpus / (tp * cp * pp);
        if (dp > gbs) { ++out.enumerated, ++out.rejected["gbs_mbs_dp"]; continue; }
        for (int64_t mbs = 1; mbs * dp <= gbs; mbs *= 2) {
          ++out.enumerated;
          if (m.heads % tp) { ++out.rejected["heads_tp"]; continue; }
          if (m.kv_heads % tp) { ++out.rejected["kv_heads_tp"]; continue; }
          if (cp > 1 && seq % (2 * cp)) { ++out.rejected["seq_cp"]; continue; }
          if (gbs % (mbs * dp)) { ++out.rejected["gbs_mbs_dp"]; continue; }
          ParallelConfig c;
          c.seq = seq, c.mbs = mbs, c.tp = tp, c.cp = cp, c.pp = pp, c.dp = dp;
          const double total = estimate_memory(m, c).total_gib();
          if (total <= threshold_gib) out.fits.insert({tp, cp, pp, mbs});
          else { out.over.insert({tp, cp, pp, mbs}); ++out.rejected["over_80pct"]; }
        }
      }
  return out;
}

}  // namespace

TEST_CASE("search enumeration and rejection counts match a brute force") {
  const ModelSpec m = small_model();
  SearchSpace space;
  space.gpus = 24;           // 24 is not a multiple of 16 or 9: world-size rejections
  space.gpus_per_node = 8;   // TP·CP ≤ 8
  space.seq = 24;            // CP 8 needs 16 | seq: rejected
  space.gbs = 20;            // DP 3 and DP 24 never divide it
  space.gpu_memory_gb = 0.4; // some layouts over 0.32 GiB, some under
  const ParallelSearchResult r = search_parallel_configs(m, space);
  const Brute b = brute_force(m, space.gpus, space.gpus_per_node, space.seq, space.gbs,
                              space.fit_fraction * space.gpu_memory_gb);

  CHECK(r.enumerated == b.enumerated);
  CHECK(r.rejected_by_reason == b.rejected);
  std::set<Key> fits, over;
  for (const auto& c : r.fitting) fits.insert({c.tp, c.cp, c.pp, c.mbs});
  for (const auto& c : r.over) over.insert({c.tp, c.cp, c.pp, c.mbs});
  CHECK(fits == b.fits);
  CHECK(over == b.over);
  // Every reason occurs in this case, so each branch above was exercised.
  for (const char* reason : {"tp_cp_per_node", "world_size", "heads_tp", "kv_heads_tp", "seq_cp",
                             "gbs_mbs_dp", "over_80pct"})
    CHECK(b.rejected.count(reason) == 1);
  CHECK_FALSE(b.fits.empty());
  // Fitting layouts are sorted by memory.
  CHECK(std::is_sorted(r.fitting.begin(), r.fitting.end(), [](const auto& x, const auto& y) {
    return x.estimate.total_bytes < y.estimate.total_bytes;
  }));
}

TEST_CASE("search over Llama-3.1-70B on 1024 GPUs: TP, CP in {1,2,4,8}, PP | 80") {
  ModelSpec m = test::llama_spec();
  m.name = "llama3.1-70b";
  m.hidden = 8192, m.ffn_hidden = 28672, m.layers = 80, m.heads = 64, m.kv_heads = 8;
  m.vocab = 128256;
  SearchSpace space;
  space.gpus = 1024, space.gpus_per_node = 8, space.seq = 8192, space.gbs = 1024;
  space.gpu_memory_gb = 80;
  const ParallelSearchResult r = search_parallel_configs(m, space);
  // 4 × 4 × 10 triples; TP·CP ≤ 8 leaves 10 (TP, CP) pairs. Every fitting layout uses all GPUs.
  CHECK(r.rejected_by_reason.at("tp_cp_per_node") == 6 * 10);
  for (const auto& c : r.fitting) {
    CHECK(c.tp * c.cp * c.pp * c.dp == 1024);
    CHECK(c.estimate.total_gib() <= 64.0);
  }
  CHECK_FALSE(r.fitting.empty());
}

TEST_CASE("the search checks its switches first and survives any global batch") {
  // A bad switch is a user error before any layout is estimated (it crashed: two classes named
  // sim::offload::SearchResult broke the One Definition Rule while the error unwound).
  SearchSpace space;
  space.gpus = 8, space.gpus_per_node = 8, space.gpu_memory_gb = 80, space.seq = 4096, space.gbs = 64;
  EstimateOptions bad;
  bad.zero_stage = 9;
  CHECK_THROWS_WITH(search_parallel_configs(small_model(), space, bad), "--zero-stage 9: expected 0, 1, 2 or 3");
  // MBS doubles while MBS*DP <= GBS: no overflow (and no division by zero) for the largest GBS.
  space.gbs = INT64_MAX;
  const ParallelSearchResult r = search_parallel_configs(small_model(), space);
  CHECK(r.enumerated > 0);
  for (const auto& c : r.fitting) CHECK((c.mbs >= 1 && c.mbs <= (int64_t{1} << 61)));
}
