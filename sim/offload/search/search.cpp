#include "sim/offload/search/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "sim/distributed/evaluate_points.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/analytic_model.h"
#include "sim/offload/compiler/block_layout.h"
#include "sim/offload/analytic/init_memory.h"
#include "sim/offload/compiler/systems.h"
#include "traces/error.h"
#include "traces/units.h"

namespace protwin::sim::offload {

namespace {

// The latest end time of ops whose kind is in `kinds` (0 if none).
int64_t last_end(const traces::Report& r, std::initializer_list<const char*> kinds) {
  int64_t t = 0;
  for (const auto& op : r.ops)
    for (const char* k : kinds)
      if (op.kind == k) t = std::max(t, op.end.ns);
  return t;
}

// The n_buffer values to visit with n_persist = np: the system's grid clamped to what the
// compiler accepts, [buffers a block needs at once, non-persistent chunks], or, for a value the
// user fixed, only that value if it is accepted; a single 1 when every chunk is persistent (the
// buffers are unused).
std::vector<int> buffer_values(const std::vector<int>& grid, const ChunkLayout& layout, int np, bool offload,
                               bool user_fixed) {
  const int n_chunks = static_cast<int>(layout.chunks.size());
  if (!offload || np >= n_chunks) return {1};
  const int lo = buffers_needed(layout, np), hi = n_chunks - np;
  std::vector<int> out;
  for (int v : grid) {
    if (user_fixed && (v < lo || v > hi)) continue;
    const int c = std::clamp(v, lo, hi);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

bool fits_memory(const AnalyticEstimate& e, const RankMemory& cap) {
  return e.peak_gpu_bytes <= cap.gpu_bytes && e.peak_pinned_bytes <= cap.pinned_bytes &&
         e.peak_pageable_bytes <= cap.pageable_bytes && e.peak_pinned_bytes + e.peak_pageable_bytes <= cap.host_bytes;
}

int swap_spacing_for(const WorkloadTimes& t) {
  if (t.layer_block.empty()) return 1;
  const size_t mid = static_cast<size_t>(t.layer_block[t.layer_block.size() / 2]);
  if (t.fwd_s[mid] <= 0) return 1;
  // Layers of forward compute needed to hide one layer's swap-out.
  return std::max(1, static_cast<int>(std::ceil(t.swap_out_s[mid] / t.fwd_s[mid])));
}

// The Pareto front of `cands` under key(c) = {memory, time}, both better when smaller: by
// increasing memory (then time), each candidate faster than every one before it.
template <class Key>
std::vector<Candidate> pareto_front(std::vector<Candidate> cands, Key key) {
  std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  std::vector<Candidate> front;
  for (const auto& c : cands)
    if (front.empty() || key(c).second < key(front.back()).second) front.push_back(c);
  return front;
}

// The plan and report of the best candidate simulated so far, offered by the threads as they
// finish: the most tokens/s, on a tie the first in simulation order ({round's first index,
// index in the round}), as the best is chosen from the candidates; so it is not simulated twice.
struct BestPlan {
  void offer(double tps, std::pair<size_t, size_t> order, CompiledPlan&& p, traces::Report&& r) {
    std::lock_guard<std::mutex> lock(mutex);
    if (held && !(tps > tokens_per_s || (tps == tokens_per_s && order < first_seen))) return;
    held = true;
    tokens_per_s = tps;
    first_seen = order;
    std::swap(plan, p);  // the old best goes back to the caller, freed there outside the lock
    std::swap(report, r);
  }
  std::mutex mutex;
  bool held = false;
  double tokens_per_s = 0;
  std::pair<size_t, size_t> first_seen;
  CompiledPlan plan;
  traces::Report report;
};

// A simulated candidate's fields, each as f(name, field): written only when it was simulated.
template <class C, class F>
void simulated_fields(C& c, F&& f) {
  using Seconds = std::initializer_list<std::pair<const char*, decltype(&c.iteration_s)>>;
  using ByteCounts = std::initializer_list<std::pair<const char*, decltype(&c.peak_gpu_bytes)>>;
  for (auto [key, v] : Seconds{{"iteration_s", &c.iteration_s}, {"tokens_per_s", &c.tokens_per_s},
                               {"forward_s", &c.forward_s}, {"backward_s", &c.backward_s},
                               {"exposed_optimizer_s", &c.exposed_optimizer_s}})
    f(key, *v);
  for (auto [key, v] : ByteCounts{{"peak_gpu_bytes", &c.peak_gpu_bytes}, {"peak_pinned_bytes", &c.peak_pinned_bytes},
                                  {"peak_pageable_bytes", &c.peak_pageable_bytes}, {"bound_gpu_bytes", &c.bound_gpu_bytes},
                                  {"init_gpu_bytes", &c.init_gpu_bytes}, {"init_host_bytes", &c.init_host_bytes}})
    f(key, *v);
  f("priced_by", c.priced_by);
}

}  // namespace

Workload options_workload(const ModelSpec& model, const SearchOptions& o, int64_t batch) {
  WorkloadOptions wo;
  wo.batch = batch;
  wo.seq = o.seq;
  wo.dtype = o.dtype;
  wo.flash_attention = o.flash_attention;
  wo.hf_eager = o.hf_eager;
  wo.dropout = o.hf_eager;  // GPT2Config's attn_pdrop, resid_pdrop and embd_pdrop are 0.1
  return build_workload(model, wo);
}

RankMemory rank_memory(const hw::Machine& m, int gpus, int nodes) {
  RankMemory r;
  r.gpu_bytes = m.gpu.usable_memory_bytes > 0 ? m.gpu.usable_memory_bytes : m.gpu.memory_bytes;
  const int ranks = std::max(1, std::min(gpus / std::max(1, nodes), std::max(1, m.gpu.count)));
  r.pinned_bytes = r.pageable_bytes = r.host_bytes = m.host.memory_bytes / ranks;  // each pool up to the share
  return r;
}

std::pair<int, int> place_ranks(const hw::HardwareCostModel& cost, int gpus, int nodes) {
  const hw::Machine& m = cost.machine();
  const int per_node = std::max(1, m.gpu.count);
  PROTWIN_CHECK(gpus >= 0, "--gpus: expected a number >= 0, got ", gpus);
  PROTWIN_CHECK(nodes >= 0, "--nodes: expected a number >= 1 (0: as many as --gpus needs), got ", nodes);
  if (nodes == 0) {
    PROTWIN_CHECK(gpus <= per_node || (gpus % per_node == 0 && cost.collectives().has_network()), "--gpus: ", gpus,
                  " GPUs requested but ", m.name, " has ", m.gpu.count,
                  cost.collectives().has_network()
                      ? " per node\nhint: more than one node takes a multiple of " + std::to_string(per_node) +
                            " GPUs, or name the nodes with --nodes"
                      : std::string(" (and no inter-node network: /network or /collectives/inter_node)"));
    nodes = gpus > per_node ? gpus / per_node : 1;
  }
  PROTWIN_CHECK(nodes == 1 || cost.collectives().has_network(), "--nodes: ", nodes, " nodes of ", m.name,
                ", but the machine has no inter-node network (/network or /collectives/inter_node)");
  if (gpus == 0) gpus = nodes * per_node;
  PROTWIN_CHECK(gpus % nodes == 0, "--gpus: ", gpus, " GPUs do not spread evenly over --nodes ", nodes);
  PROTWIN_CHECK(gpus / nodes <= per_node, "--gpus: ", gpus, " GPUs requested but ", m.name, " has ", m.gpu.count,
                nodes > 1 ? " per node (--nodes " + std::to_string(nodes) + ")"
                : cost.collectives().has_network() ? "\nhint: --nodes N spreads them over N nodes"
                                                   : std::string());
  return {gpus, nodes};
}

Candidate evaluate(const Workload& w, const hw::HardwareCostModel& cost, int gpus, const OffloadKnobs& k,
                   CompiledPlan* plan_out, traces::Report* report_out, int nodes,
                   std::shared_ptr<const ChunkLayout> layout) {
  Candidate c;
  c.knobs = k;
  c.batch = w.options.batch;
  try {
    nlohmann::json meta = {{"machine", cost.machine().name}};
    const RankMemory cap = rank_memory(cost.machine(), gpus, nodes);
    // Building the model comes first: it must fit before the steady state matters.
    const InitMemory init = init_memory(w, k);
    c.init_gpu_bytes = init.gpu_bytes;
    c.init_host_bytes = init.host_bytes;
    auto gib = [](int64_t b) { return std::to_string(static_cast<double>(b) / static_cast<double>(kGiB)) + " GiB"; };
    PROTWIN_CHECK(init.host_bytes <= cap.host_bytes && init.gpu_bytes <= cap.gpu_bytes, "initialisation (", init.how,
                  ") does not fit: building the model needs ", gib(init.host_bytes), " of host memory per rank (the rank has ",
                  gib(cap.host_bytes), ") and ", gib(init.gpu_bytes), " of GPU memory (the GPU has ", gib(cap.gpu_bytes),
                  ")");
    CompiledPlan plan = compile_offload_plan(w, gpus, cap, k, meta, nodes, std::move(layout));
    // The capacity check on the plan's memory bound under any schedule (DESIGN §3).
    const traces::ValidationResult v = traces::validate(plan.plan);
    for (const auto& p : v.pools)
      if (p.name == "gpu") c.bound_gpu_bytes = p.high_water.n;
    traces::Report r = PlanSimulator(cost).run(plan.plan);
    c.simulated = true;
    c.iteration_s = r.iteration.seconds();
    c.tokens_per_s = static_cast<double>(w.tokens * gpus) / c.iteration_s;
    const int64_t fwd = last_end(r, {"forward"});
    const int64_t bwd = std::max(last_end(r, {"backward", "recompute"}), fwd);
    c.forward_s = static_cast<double>(fwd) * 1e-9;
    c.backward_s = static_cast<double>(bwd - fwd) * 1e-9;
    c.exposed_optimizer_s = std::max(0.0, c.iteration_s - static_cast<double>(bwd) * 1e-9);
    if (const auto* p = r.pool("gpu")) c.peak_gpu_bytes = p->peak.n;
    if (const auto* p = r.pool("pinned")) c.peak_pinned_bytes = p->peak.n;
    if (const auto* p = r.pool("pageable")) c.peak_pageable_bytes = p->peak.n;
    c.priced_by = r.priced_by;
    if (plan_out) *plan_out = std::move(plan);
    if (report_out) *report_out = std::move(r);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) throw;
    c.failure = e.what();
  }
  return c;
}

void to_json(nlohmann::json& j, const Candidate& c) {
  j = {{"batch", c.batch},
       {"knobs", c.knobs.to_json()},
       {"analytic_iteration_s", c.analytic_s},
       {"analytic_peak_gpu_bytes", c.analytic_peak_gpu_bytes}};
  if (c.simulated) simulated_fields(c, [&j](const char* key, const auto& v) { j[key] = v; });
  if (!c.failure.empty()) j["failure"] = c.failure;
}

void from_json(const nlohmann::json& j, Candidate& c) {
  c = Candidate{};
  c.batch = j.at("batch");
  c.knobs = knobs_from_json(j.at("knobs"), "candidate");
  c.analytic_s = j.at("analytic_iteration_s");
  c.analytic_peak_gpu_bytes = j.at("analytic_peak_gpu_bytes");
  c.simulated = j.contains("iteration_s");
  if (c.simulated) simulated_fields(c, [&j](const char* key, auto& v) { j.at(key).get_to(v); });
  c.failure = j.value("failure", "");
}

SearchResult search_policy(const ModelSpec& model, const hw::HardwareCostModel& cost, const SearchOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  find_system(o.system);
  PROTWIN_CHECK(o.gpus >= 1, "--gpus: expected at least 1, got ", o.gpus);
  PROTWIN_CHECK(o.nodes >= 1, "--nodes: expected at least 1, got ", o.nodes);
  place_ranks(cost, o.gpus, o.nodes);
  PROTWIN_CHECK(o.batch >= 0, "--batch: expected a positive integer or 'auto', got ", o.batch);
  SearchResult res;
  res.system = o.system;
  const RankMemory cap = rank_memory(cost.machine(), o.gpus, o.nodes);

  std::vector<int64_t> batches;
  if (o.batch > 0) batches.push_back(o.batch);
  else
    for (int64_t b = 1; b <= o.max_batch; b *= 2) batches.push_back(b);

  // The setting closest to fitting (smallest worst ratio of need to capacity): what the user is
  // told a model would need when nothing fits.
  double closest = std::numeric_limits<double>::max();
  auto note_need = [&](const AnalyticEstimate& e) {
    const int64_t host = e.peak_pinned_bytes + e.peak_pageable_bytes;
    const double ratio = std::max(static_cast<double>(e.peak_gpu_bytes) / static_cast<double>(cap.gpu_bytes),
                                  static_cast<double>(host) / static_cast<double>(std::max<int64_t>(1, cap.host_bytes)));
    if (res.least_gpu_bytes == 0 || e.peak_gpu_bytes < res.least_gpu_bytes) res.least_gpu_bytes = e.peak_gpu_bytes;
    if (res.least_host_bytes == 0 || host < res.least_host_bytes) res.least_host_bytes = host;
    if (ratio < closest) {
      closest = ratio;
      res.smallest_peak_gpu_bytes = e.peak_gpu_bytes;
      res.smallest_host_bytes = host;
    }
  };
  std::vector<Candidate> simulated_all;
  BestPlan best_plan;
  std::shared_ptr<const ChunkLayout> packed;  // the parameters' chunks: the same at every batch
  long step = 0;
  for (int64_t batch : batches) {
    if (o.progress) o.progress(step++, static_cast<long>(batches.size()));
    const Workload w = options_workload(model, o, batch);
    OffloadKnobs base = base_knobs(o.system);
    if (o.force_overlap >= 0) base.cpu_adam_overlap = o.force_overlap != 0;
    if (o.force_buffer_reuse >= 0) base.buffer_reuse = o.force_buffer_reuse != 0;
    if (!packed) packed = std::make_shared<const ChunkLayout>(layout_for(w, base));
    const ChunkLayout& layout = *packed;
    if (!base.per_block_chunks) base.chunk_bytes = layout.chunk_bytes;
    const WorkloadTimes times = workload_times(w, layout, cost, o.gpus, base, o.nodes);
    const int n_chunks = static_cast<int>(layout.chunks.size());
    const int layers = static_cast<int>(w.model.layers);
    KnobSpace space = knob_space(o.system, n_chunks, layers, buffers_needed(layout, 0));
    if (o.fix_n_persist >= 0) space.n_persist = {o.fix_n_persist};
    if (o.fix_n_buffer >= 0) space.n_buffer = {o.fix_n_buffer};
    if (o.fix_n_swap >= 0) space.n_swap = {o.fix_n_swap};
    if (o.fix_n_checkpoint >= 0) space.n_checkpoint = {o.fix_n_checkpoint};
    if (o.all_checkpoint) {
      space.n_swap = {0};
      space.n_checkpoint = {layers};
    }
    base.swap_spacing = swap_spacing_for(times);

    std::vector<Candidate> feasible;
    // The peaks of k, its activations' part kept by (n_swap, n_checkpoint) for every n_persist and n_buffer.
    std::vector<std::optional<ActivationPeak>> activations(static_cast<size_t>((layers + 1) * (layers + 1)));
    auto peak = [&](const OffloadKnobs& k) {
      std::optional<ActivationPeak> refused;  // block_layout throws for the pairs outside the table
      const bool kept = k.n_swap >= 0 && k.n_checkpoint >= 0 && k.n_swap + k.n_checkpoint <= layers;
      auto& a = kept ? activations[static_cast<size_t>(k.n_swap * (layers + 1) + k.n_checkpoint)] : refused;
      if (!a) a = activation_peak(times, k.swap_spacing, block_layout(layers, k.n_swap, k.n_checkpoint, k.swap_spacing));
      return analytic_peak(times, k, *a);
    };
    auto consider = [&](OffloadKnobs k, bool count_prune) {
      const auto modes = block_layout(layers, k.n_swap, k.n_checkpoint, k.swap_spacing);
      const AnalyticEstimate e = analytic_estimate(times, k, modes);
      const bool fits = fits_memory(e, cap);
      note_need(e);
      if (count_prune) {
        ++res.configurations;
        if (!fits) ++res.pruned;
      }
      if (fits) {
        Candidate c;
        c.knobs = k;
        c.batch = batch;
        c.analytic_s = e.iteration_s;
        c.analytic_peak_gpu_bytes = e.peak_gpu_bytes;
        feasible.push_back(c);
      }
      return fits;
    };
    for (int np : space.n_persist) {
      if (np > n_chunks) continue;
      for (int nbuf : buffer_values(space.n_buffer, layout, np, base.offload, o.fix_n_buffer >= 0)) {
        for (int ns : space.n_swap) {
          OffloadKnobs k = base;
          k.n_persist = np;
          k.n_buffer = nbuf;
          k.n_swap = ns;
          if (!space.n_checkpoint.empty()) {
            for (int nc : space.n_checkpoint) {
              if (ns + nc > layers) continue;
              k.n_checkpoint = nc;
              consider(k, true);
            }
            continue;
          }
          // ProTrain: the fewest checkpointed layers that fit (memory falls as n_checkpoint grows).
          int lo = 0, hi = layers - ns;
          k.n_checkpoint = hi;
          ++res.configurations;
          const AnalyticEstimate e_hi = peak(k);
          note_need(e_hi);
          if (!fits_memory(e_hi, cap)) {
            ++res.pruned;
            continue;
          }
          while (lo < hi) {
            const int mid = (lo + hi) / 2;
            k.n_checkpoint = mid;
            if (fits_memory(peak(k), cap))
              hi = mid;
            else
              lo = mid + 1;
          }
          k.n_checkpoint = lo;
          consider(k, false);
        }
      }
    }
    if (feasible.empty()) {
      if (o.batch == 0 && !simulated_all.empty()) break;  // larger batches will not fit either
      continue;
    }
    // Simulate the best by analytic time, plus the analytic Pareto front (time vs memory), each
    // setting once (the top, the front and the per-swap bests overlap): every pick is `base` with
    // the four knobs the loops set, so those tell two apart.
    std::sort(feasible.begin(), feasible.end(), [](const Candidate& a, const Candidate& b) {
      return a.analytic_s != b.analytic_s ? a.analytic_s < b.analytic_s
                                          : a.analytic_peak_gpu_bytes < b.analytic_peak_gpu_bytes;
    });
    std::vector<Candidate> pick;
    auto knobs_set = [](const OffloadKnobs& k) { return std::tie(k.n_persist, k.n_buffer, k.n_swap, k.n_checkpoint); };
    auto add = [&](const Candidate& c) {
      auto same = [&](const Candidate& u) { return knobs_set(u.knobs) == knobs_set(c.knobs); };
      if (std::none_of(pick.begin(), pick.end(), same)) pick.push_back(c);
    };
    // The i-th of up to kSpread of n values, spread evenly from the first to the last.
    constexpr size_t kSpread = 8;
    auto spread = [](size_t i, size_t n) { return n <= kSpread ? i : i * (n - 1) / (kSpread - 1); };
    for (size_t i = 0; i < std::min(feasible.size(), static_cast<size_t>(o.simulate_top)); ++i) add(feasible[i]);
    const std::vector<Candidate> front =
        pareto_front(feasible, [](const Candidate& c) { return std::pair(c.analytic_peak_gpu_bytes, c.analytic_s); });
    for (size_t i = 0; i < std::min(front.size(), kSpread); ++i) add(front[spread(i, front.size())]);
    // The analytic model does not charge swap-outs for sharing the host link with prefetches, so
    // it can rank a swap-heavy setting above a better one with fewer swaps: also simulate the
    // analytically best setting for each of up to 8 swap counts (always including 0).
    std::vector<int> swaps;
    for (const auto& c : feasible) swaps.push_back(c.knobs.n_swap);
    std::sort(swaps.begin(), swaps.end());
    swaps.erase(std::unique(swaps.begin(), swaps.end()), swaps.end());
    for (size_t i = 0; i < std::min(swaps.size(), kSpread); ++i) {
      const int ns = swaps[spread(i, swaps.size())];
      // `feasible` is sorted by analytic time: the first with this swap count is its best.
      add(*std::find_if(feasible.begin(), feasible.end(), [ns](const Candidate& c) { return c.knobs.n_swap == ns; }));
    }
    // Simulate the picks on o.threads threads. The analytic peak can be under the plan's
    // validated bound; when every pick is refused, go on down the analytic ranking, a round at a
    // time, so a model that fits is not reported as not fitting.
    size_t next_rank = std::min(feasible.size(), static_cast<size_t>(o.simulate_top));  // next by analytic time
    constexpr size_t kMaxRounds = 6;
    for (size_t round = 0; round < kMaxRounds && !pick.empty(); ++round) {
      std::vector<Candidate> done(pick.size());
      std::vector<size_t> picked(pick.size());
      std::iota(picked.begin(), picked.end(), size_t{0});
      std::vector<std::optional<PointError>> errors(pick.size());
      const size_t first = simulated_all.size();
      run_on_threads(picked, std::max(1, o.threads), [&](size_t i) {
        CompiledPlan plan;
        traces::Report report;
        done[i] = evaluate(w, cost, o.gpus, pick[i].knobs, &plan, &report, o.nodes, packed);
        done[i].analytic_s = pick[i].analytic_s;
        done[i].analytic_peak_gpu_bytes = pick[i].analytic_peak_gpu_bytes;
        if (done[i].simulated) best_plan.offer(done[i].tokens_per_s, {first, i}, std::move(plan), std::move(report));
      }, errors);
      for (const auto& e : errors)
        if (e) e->rethrow();
      res.simulated += static_cast<long>(done.size());
      bool any = false;
      for (auto& c : done) {
        if (c.simulated) {
          simulated_all.push_back(std::move(c));
          any = true;
        } else if (res.first_failure.empty()) {
          res.first_failure = c.failure;
        }
      }
      if (any) break;
      pick.clear();
      for (; next_rank < feasible.size() && pick.size() < static_cast<size_t>(o.simulate_top); ++next_rank)
        pick.push_back(feasible[next_rank]);
    }
  }
  if (o.progress) o.progress(step, static_cast<long>(batches.size()));

  // Best by throughput; the Pareto front of throughput vs peak GPU memory.
  for (const auto& c : simulated_all)
    if (!res.found || c.tokens_per_s > res.best.tokens_per_s) {
      res.best = c;
      res.found = true;
    }
  res.pareto = pareto_front(simulated_all, [](const Candidate& c) { return std::pair(c.peak_gpu_bytes, -c.tokens_per_s); });
  if (res.found) {
    PROTWIN_ASSERT(best_plan.tokens_per_s == res.best.tokens_per_s, "the best plan kept is not the best candidate's");
    res.best_plan = std::move(best_plan.plan);
    res.best_report = std::move(best_plan.report);
    res.best_plan.plan.meta["system"] = o.system;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace protwin::sim::offload
