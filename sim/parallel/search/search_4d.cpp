#include "sim/parallel/search/search_4d.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "sim/distributed/evaluate_points.h"
#include "sim/parallel/estimator/estimate_json.h"
#include "traces/error.h"

namespace protwin::sim::parallel {

Search4dResult search_4d(const ModelSpec& model, const hw::HardwareCostModel& cost, const Search4dOptions& o) {
  const hw::Machine& machine = cost.machine();
  PROTWIN_CHECK(o.nodes >= 1, "--nodes ", o.nodes, ": must be at least 1");
  PROTWIN_CHECK(o.threads >= 1, "--threads ", o.threads, ": must be at least 1");
  PROTWIN_CHECK(o.mbs_max >= 0, "--mbs-max ", o.mbs_max, ": must be at least 1");
  PROTWIN_CHECK(o.nodes == 1 || cost.collectives().has_network(), "--nodes ", o.nodes, ": machine ",
                machine.name, " has no network between nodes (/network or /collectives/inter_node)");
  Search4dResult r;
  r.model = model.name;
  r.machine = machine.name;
  r.nodes = o.nodes;
  r.gpus_per_node = machine.gpu.count;
  r.world = o.nodes * machine.gpu.count;
  r.gpu_memory_gb = o.gpu_memory_gb > 0
                        ? o.gpu_memory_gb
                        : std::round(static_cast<double>(machine.gpu.memory_bytes) / MemoryEstimate::kGiB);

  SearchSpace space;
  space.gpus = r.world;
  space.gpus_per_node = r.gpus_per_node;
  space.gpu_memory_gb = r.gpu_memory_gb;
  space.seq = o.base.seq == 0 ? model.default_seq : o.base.seq;
  space.gbs = o.base.gbs;
  check_tokens_per_iteration(space.gbs, space.seq);
  EstimateOptions eo;
  eo.recompute = o.base.recompute;
  eo.distributed_optimizer = o.base.distributed_optimizer;
  eo.flash_attention = o.base.flash_attention;
  if (o.base.fsdp) {  // as simulate_4d estimates FSDP FULL_SHARD (DP-only layouts)
    eo.method = EstimateMethod::kFsdp;
    eo.fsdp_param_bytes = o.base.dtype == "fp32" ? 4 : 2;
    eo.fp32_grad_accum = o.base.grad_bytes == 4;
  }
  space.uneven_stages = o.uneven_stages;
  r.enumeration = search_parallel_configs(model, space, eo);
  r.options = o.base;
  r.options.seq = space.seq;

  std::vector<Search4dRow> rows;
  for (const auto& c : r.enumeration.fitting) {
    if (o.mbs_max > 0 && c.mbs > o.mbs_max) {
      ++r.over_mbs_max;
      continue;
    }
    rows.emplace_back().candidate = c;
  }

  const auto t0 = std::chrono::steady_clock::now();
  const std::function<Layout4dResult(size_t)> simulate_row = [&](size_t i) {
    Simulate4dConfig cfg;
    cfg.options = o.base;
    cfg.options.seq = space.seq;
    cfg.options.sizes = {rows[i].candidate.tp, rows[i].candidate.cp, rows[i].candidate.pp, rows[i].candidate.dp};
    cfg.options.mbs = rows[i].candidate.mbs;
    cfg.options.split = rows[i].candidate.split;
    cfg.nodes = o.nodes;
    cfg.gpu_memory_gb = r.gpu_memory_gb;
    cfg.collective_sms = o.collective_sms;
    const Simulate4dResult s = simulate_4d(model, cost, cfg);
    return Layout4dResult{s.placement.gpus_per_node, s.placement.nodes, s.microbatches, s.iteration_s,
                          s.tokens_per_s, s.tflops_per_gpu, s.mfu, s.bubble_fraction, s.memory.total_bytes,
                          s.fits_80pct, s.priced_by, s.peak_live_ops, s.peak_live_ops_per_stage};
  };
  // Layouts over the threads (and MPI ranks); a refused layout (protwin::Error) is that row's
  // failure, anything else (an internal error, out of memory) stops the search.
  const auto outcomes = evaluate_points(rows.size(), o.threads, simulate_row, o.progress);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& e = outcomes[i].error;
    if (e && e->kind != PointError::Kind::kUser) e->rethrow();
    if (e) rows[i].failure = e->message;
    else {
      rows[i].result = *outcomes[i].value;
      rows[i].simulated = true;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::stable_sort(rows.begin(), rows.end(), [](const Search4dRow& a, const Search4dRow& b) {
    if (a.simulated != b.simulated) return a.simulated;
    return a.simulated && a.result.tokens_per_s > b.result.tokens_per_s;
  });
  for (const auto& row : rows) (row.simulated ? r.simulated : r.failed) += 1;
  r.ranked = std::move(rows);
  return r;
}

nlohmann::json search_4d_to_json(const Search4dResult& r, size_t top) {
  nlohmann::json rows = nlohmann::json::array(), failures = nlohmann::json::array();
  for (const auto& row : r.ranked) {
    const SearchCandidate& c = row.candidate;
    nlohmann::json layout = {{"tp", c.tp}, {"cp", c.cp}, {"pp", c.pp}, {"dp", c.dp}, {"mbs", c.mbs}};
    if (c.split.uneven()) layout["stage_layers"] = stage_layers_json(c.split);
    if (!row.simulated) {
      layout["failure"] = row.failure;
      failures.push_back(layout);
      continue;
    }
    if (top > 0 && rows.size() >= top) continue;
    const Layout4dResult& s = row.result;
    layout["rank"] = rows.size() + 1;
    layout["microbatches"] = s.microbatches;
    layout["iteration_s"] = s.iteration_s;
    layout["tokens_per_s"] = s.tokens_per_s;
    layout["tflops_per_gpu"] = s.tflops_per_gpu;
    layout["mfu"] = s.mfu;
    layout["bubble_fraction"] = s.bubble_fraction;
    layout["memory_GiB"] = s.memory_gib();
    layout["fits_80pct"] = s.fits_80pct;
    layout["placement"] = placement_to_json(place_groups({c.tp, c.cp, c.pp, c.dp}, s.gpus_per_node, s.nodes));
    layout["priced_by"] = s.priced_by;
    layout["peak_live_ops"] = s.peak_live_ops;
    layout["peak_live_ops_per_stage"] = s.peak_live_ops_per_stage;
    rows.push_back(layout);
  }
  return {{"model", r.model},
          {"machine", r.machine},
          {"nodes", r.nodes},
          {"gpus_per_node", r.gpus_per_node},
          {"world", r.world},
          {"seq", r.options.seq},
          {"gbs", r.options.gbs},
          {"recompute", recompute_name(r.options.recompute)},
          {"dtype", r.options.dtype},
          {"gpu_memory_GB", r.gpu_memory_gb},
          {"threshold_GiB", r.enumeration.threshold_gib},
          {"seconds", r.seconds},
          {"counts",
           {{"enumerated", r.enumeration.enumerated},
            {"fit", r.enumeration.fitting.size()},
            {"over_mbs_max", r.over_mbs_max},
            {"simulated", r.simulated},
            {"failed", r.failed},
            {"rejected_by_reason", r.enumeration.rejected_by_reason}}},
          {"configurations", rows},
          {"failures", failures}};
}

}  // namespace protwin::sim::parallel
