#include "sim/parallel/search_4d.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "sim/estimate/estimate_json.h"
#include "sim/parallel/estimate_model.h"
#include "traces/error.h"

namespace protwin::sim {

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
  r.enumeration = search_parallel_configs(to_estimate_model(model), space, eo);
  r.options = o.base;
  r.options.seq = space.seq;

  std::vector<Search4dRow> rows;
  for (const auto& c : r.enumeration.fitting) {
    if (o.mbs_max > 0 && c.mbs > o.mbs_max) {
      ++r.over_mbs_max;
      continue;
    }
    Search4dRow row;
    row.candidate = c;
    rows.push_back(std::move(row));
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0}, done{0};
  auto work_rows = [&](bool report) {
    for (size_t i = next++; i < rows.size(); i = next++) {
      Search4dRow& row = rows[i];
      Simulate4dConfig cfg;
      cfg.options = o.base;
      cfg.options.seq = space.seq;
      cfg.options.sizes = {row.candidate.tp, row.candidate.cp, row.candidate.pp, row.candidate.dp};
      cfg.options.mbs = row.candidate.mbs;
      cfg.nodes = o.nodes;
      cfg.gpu_memory_gb = r.gpu_memory_gb;
      try {
        row.result = simulate_4d(model, cost, cfg);
        row.simulated = true;
      } catch (const Error& e) {
        row.failure = e.what();
      }
      ++done;
      if (report && o.progress) o.progress(static_cast<long>(done.load()), static_cast<long>(rows.size()));
    }
  };
  // A failure other than a refused layout (an internal error, out of memory) stops the pool and
  // is rethrown once every thread has joined.
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work = [&](bool report) {
    try {
      work_rows(report);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = rows.size();
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < o.threads; ++t) pool.emplace_back(work, false);
  } catch (...) {  // no more threads: the ones started and this one do the work
  }
  work(true);
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  if (o.progress) o.progress(static_cast<long>(rows.size()), static_cast<long>(rows.size()));
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
    if (!row.simulated) {
      layout["failure"] = row.failure;
      failures.push_back(layout);
      continue;
    }
    if (top > 0 && rows.size() >= top) continue;
    const Simulate4dResult& s = row.result;
    layout["rank"] = rows.size() + 1;
    layout["microbatches"] = s.microbatches;
    layout["iteration_s"] = s.iteration_s;
    layout["tokens_per_s"] = s.tokens_per_s;
    layout["tflops_per_gpu"] = s.tflops_per_gpu;
    layout["mfu"] = s.mfu;
    layout["bubble_fraction"] = s.bubble_fraction;
    layout["memory_GiB"] = s.memory.total_gib();
    layout["fits_80pct"] = s.fits_80pct;
    layout["placement"] = placement_to_json(s.placement);
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

}  // namespace protwin::sim
