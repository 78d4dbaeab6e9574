#include "sim/parallel/estimator/parallel_constraints.h"

#include <iterator>

#include "traces/error.h"

namespace protwin::sim::parallel {

using protwin::detail::concat;

const char* constraint_key(ConstraintKind k) {
  static constexpr const char* kKeys[] = {"positive", "model_size", "layers_pp", "heads_tp", "kv_heads_tp",
                                          "seq_cp", "virtual_stages", "gbs_mbs_dp", "world_size",
                                          "tp_cp_per_node", "fsdp_dp_only"};
  static_assert(std::size(kKeys) == static_cast<size_t>(ConstraintKind::kFsdpDpOnly) + 1, "a key per kind");
  return kKeys[static_cast<size_t>(k)];
}

int64_t world_size(int64_t tp, int64_t cp, int64_t pp, int64_t dp) {
  int64_t world = 1;
  for (int64_t v : {tp, cp, pp, dp}) {
    if (v < 1 || world > kMaxWorldSize / v) return -1;
    world *= v;
  }
  return world;
}

std::optional<ConstraintViolation> find_violation(const ModelSpec& m, const ParallelConfig& c,
                                                  const EstimateOptions& opt) {
  using K = ConstraintKind;
  auto bad = [](K k, std::string msg) { return std::optional<ConstraintViolation>({k, std::move(msg)}); };
  const std::string who = m.name.empty() ? std::string("model") : "model " + m.name;
  const std::pair<const char*, int64_t> model_sizes[] = {
      {"hidden", m.hidden}, {"ffn_hidden", m.ffn_hidden}, {"layers", m.layers},
      {"heads", m.heads},   {"kv_heads", m.kv_heads},     {"vocab", m.vocab}};
  for (const auto& [name, v] : model_sizes)
    if (v < 1) return bad(K::kPositive, concat(who, ": ", name, " ", v, " must be at least 1"));
  // The parameter count in floating point first: the exact int64 count would overflow.
  const double h = static_cast<double>(m.hidden), L = static_cast<double>(m.layers);
  const double q = static_cast<double>(m.head_dim()) * static_cast<double>(m.heads);
  const double kv = static_cast<double>(m.head_dim()) * static_cast<double>(m.kv_heads);
  const double mlp = (m.swiglu() ? 3 : 2) * h * static_cast<double>(m.ffn_hidden);
  const double params = L * (2 * h * q + 2 * h * kv + mlp + 2 * h) + h +
                        (m.tied_embeddings ? 1 : 2) * h * static_cast<double>(m.vocab);
  if (!(params <= kMaxParameters))
    return bad(K::kModelSize, concat(who, ": about ", params, " parameters, more than the ", kMaxParameters,
                                     " the estimator counts"));
  const std::pair<const char*, int64_t> sizes[] = {
      {"--seq", c.seq}, {"--mbs", c.mbs}, {"--tp", c.tp}, {"--cp", c.cp}, {"--pp", c.pp}, {"--dp", c.dp}};
  for (const auto& [flag, v] : sizes)
    if (v < 1) return bad(K::kPositive, concat(flag, " ", v, ": must be at least 1"));
  if (c.gbs < 0) return bad(K::kPositive, concat("--gbs ", c.gbs, ": must be at least 1"));
  if (c.gpus < 0) return bad(K::kPositive, concat("--gpus ", c.gpus, ": must be at least 1"));
  if (opt.virtual_stages < 0)
    return bad(K::kPositive, concat("--virtual-stages ", opt.virtual_stages, ": must be at least 1"));
  const int64_t world = world_size(c.tp, c.cp, c.pp, c.dp);
  if (world < 0)
    return bad(K::kWorldSize, concat("--tp/--cp/--pp/--dp: TP*CP*PP*DP = ", c.tp, "*", c.cp, "*", c.pp, "*",
                                     c.dp, " is more than ", kMaxWorldSize, " GPUs"));

  if (std::string problem = stage_split_problem(m.layers, c.pp, c.split); !problem.empty())
    return bad(K::kLayersPp, std::move(problem));
  if (m.heads % c.tp != 0)
    return bad(K::kHeadsTp, concat("--tp ", c.tp, ": heads ", m.heads, " is not divisible by TP ", c.tp));
  if (m.kv_heads % c.tp != 0)
    return bad(K::kKvHeadsTp,
               concat("--tp ", c.tp, ": KV heads ", m.kv_heads, " is not divisible by TP ", c.tp));
  // Megatron's load-balanced context parallelism cuts the sequence into 2·CP chunks (CP > 1 only).
  if (c.cp > 1 && c.seq % (2 * c.cp) != 0)
    return bad(K::kSeqCp, concat("--cp ", c.cp, ": sequence ", c.seq, " is not divisible by 2*CP ",
                                 2 * c.cp));
  if (opt.virtual_stages > 0 && c.split.uneven())
    return bad(K::kVirtualStages, concat("--virtual-stages ", opt.virtual_stages,
                                         ": uneven first/last stages need the non-interleaved schedule"));
  if (opt.virtual_stages > 1 && (m.layers / c.pp) % opt.virtual_stages != 0)
    return bad(K::kVirtualStages,
               concat("--virtual-stages ", opt.virtual_stages, ": layers per stage ", m.layers / c.pp,
                      " is not divisible by virtual stages ", opt.virtual_stages));
  if (c.gbs > 0 && c.gbs % (c.mbs * c.dp) != 0)
    return bad(K::kGbsMbsDp, concat("--gbs ", c.gbs, ": global batch ", c.gbs,
                                    " is not divisible by MBS*DP ", c.mbs * c.dp, " (MBS ", c.mbs,
                                    ", DP ", c.dp, ")"));
  if (c.gpus > 0 && world != c.gpus)
    return bad(K::kWorldSize, concat("--gpus ", c.gpus, ": TP*CP*PP*DP = ", c.tp, "*", c.cp, "*", c.pp,
                                     "*", c.dp, " = ", world, " does not match ", c.gpus, " GPUs"));
  if (opt.method == EstimateMethod::kFsdp && (c.tp > 1 || c.cp > 1 || c.pp > 1))
    return bad(K::kFsdpDpOnly, concat("--tp ", c.tp, " --cp ", c.cp, " --pp ", c.pp,
                                      ": FSDP FULL_SHARD shards over data parallelism only (TP, CP and PP must be 1)"));
  return std::nullopt;
}

void check_constraints(const ModelSpec& model, const ParallelConfig& cfg,
                       const EstimateOptions& opt) {
  if (auto v = find_violation(model, cfg, opt)) throw Error(v->message);
}

}  // namespace protwin::sim::parallel
