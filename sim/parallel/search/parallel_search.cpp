#include "sim/parallel/search/parallel_search.h"

#include <algorithm>
#include <iomanip>
#include <tuple>

#include "traces/error.h"

namespace protwin::sim::parallel {

using protwin::detail::concat;

namespace {

// Positive divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i) continue;
    out.push_back(i);
    if (i != n / i) out.push_back(n / i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string gib_text(double gib) { return concat(std::setprecision(4), gib); }

bool by_memory(const SearchCandidate& x, const SearchCandidate& y) {
  return std::make_tuple(x.estimate.total_bytes, x.tp, x.cp, x.pp, x.mbs) <
         std::make_tuple(y.estimate.total_bytes, y.tp, y.cp, y.pp, y.mbs);
}

}  // namespace

ParallelSearchResult search_parallel_configs(const ModelSpec& model, const SearchSpace& space,
                                     const EstimateOptions& opt) {
  PROTWIN_CHECK(space.gpus >= 1, "--gpus ", space.gpus, ": must be at least 1");
  PROTWIN_CHECK(space.gpus_per_node >= 1, "--gpus-per-node ", space.gpus_per_node,
                ": must be at least 1");
  PROTWIN_CHECK(space.gpu_memory_gb > 0, "--gpu-memory-GB ", space.gpu_memory_gb,
                ": must be positive");
  PROTWIN_CHECK(space.seq >= 1, "--seq ", space.seq, ": must be at least 1");
  PROTWIN_CHECK(space.gbs >= 1, "--gbs ", space.gbs, ": must be at least 1");
  PROTWIN_CHECK(model.layers >= 1, "model ", model.name, ": layers ", model.layers,
                " must be at least 1");
  check_estimate_options(opt);

  ParallelSearchResult r;
  r.threshold_gib = space.fit_fraction * space.gpu_memory_gb;
  // A candidate set aside (rejected, or over the threshold), counted by its reason.
  auto set_aside = [&r](std::vector<SearchCandidate>& to, SearchCandidate c, std::string key, std::string why) {
    c.reason_key = std::move(key);
    c.reason = std::move(why);
    ++r.rejected_by_reason[c.reason_key];
    to.push_back(std::move(c));
  };

  // PP sizes: the divisors of L (even split), and with uneven_stages those with one-short ends.
  std::vector<std::pair<int64_t, StageSplit>> pipelines;
  for (int64_t pp : divisors(model.layers)) pipelines.push_back({pp, {}});
  if (space.uneven_stages)
    for (int64_t pp : divisors(model.layers + 2))
      if (const StageSplit split = one_short_ends(model.layers, pp); split.uneven()) pipelines.push_back({pp, split});
  std::sort(pipelines.begin(), pipelines.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });

  for (int64_t tp : {1, 2, 4, 8})
    for (int64_t cp : {1, 2, 4, 8})
      for (const auto& [pp, split] : pipelines) {
        SearchCandidate base;
        base.tp = tp, base.cp = cp, base.pp = pp, base.split = split;
        if (tp * cp > space.gpus_per_node) {
          set_aside(r.rejected, base, constraint_key(ConstraintKind::kTpCpPerNode),
                    concat("--tp ", tp, " --cp ", cp, ": TP*CP ", tp * cp, " exceeds ",
                           space.gpus_per_node, " GPUs per node"));
          continue;
        }
        const int64_t mp = tp * cp * pp;
        if (space.gpus % mp != 0) {
          set_aside(r.rejected, base, constraint_key(ConstraintKind::kWorldSize),
                    concat("--gpus ", space.gpus, ": not divisible by TP*CP*PP = ", tp, "*", cp, "*",
                           pp, " = ", mp));
          continue;
        }
        base.dp = space.gpus / mp;
        if (base.dp > space.gbs) {
          set_aside(r.rejected, base, constraint_key(ConstraintKind::kGbsMbsDp),
                    concat("--gbs ", space.gbs, ": global batch ", space.gbs, " is smaller than DP ",
                           base.dp));
          continue;
        }
        // MBS = 1, 2, 4, ... while MBS*DP <= GBS (by exponent: no overflow for any GBS).
        for (int k = 0; k < 62 && (int64_t{1} << k) <= space.gbs / base.dp; ++k) {
          const int64_t mbs = int64_t{1} << k;
          SearchCandidate c = base;
          c.mbs = mbs;
          ParallelConfig cfg;
          cfg.seq = space.seq, cfg.mbs = mbs, cfg.tp = tp, cfg.cp = cp, cfg.pp = pp;
          cfg.dp = c.dp, cfg.gbs = space.gbs, cfg.gpus = space.gpus, cfg.split = split;
          if (auto v = find_violation(model, cfg, opt)) {
            set_aside(r.rejected, c, constraint_key(v->kind), v->message);
            continue;
          }
          c.feasible = true;
          c.estimate = estimate_memory(model, cfg, opt);
          const double total = c.estimate.total_gib();
          if (total <= r.threshold_gib) {
            c.fits = true;
            r.fitting.push_back(std::move(c));
          } else {
            set_aside(r.over, std::move(c), "over_80pct",
                      concat("total ", gib_text(total), " GiB > ", space.fit_fraction, " * ", space.gpu_memory_gb,
                             " = ", gib_text(r.threshold_gib), " GiB"));
          }
        }
      }
  std::sort(r.fitting.begin(), r.fitting.end(), by_memory);
  std::sort(r.over.begin(), r.over.end(), by_memory);
  r.enumerated = static_cast<int64_t>(r.fitting.size() + r.over.size() + r.rejected.size());
  return r;
}

}  // namespace protwin::sim::parallel
