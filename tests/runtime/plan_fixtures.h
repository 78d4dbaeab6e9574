// Plans for the runtime tests, compiled in-process by the simulator's plan compiler (tests may
// link protwin_sim; the runtime library may not) and round-tripped through Plan JSON, so the
// runtime reads exactly what `protwin search -o plan.json` would write.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "hwmodels/machine.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/workload/model_spec.h"
#include "sim/workload/workload.h"
#include "traces/error.h"
#include "traces/plan.h"

namespace protwin::rt::testing {

constexpr int64_t kPlanBatch = 2;
constexpr int64_t kPlanSeq = 16;
constexpr int64_t kGpuBytes = int64_t{1} << 30;

inline sim::Workload tiny_workload(const std::string& model, int64_t batch = kPlanBatch, int64_t seq = kPlanSeq) {
  sim::WorkloadOptions o;
  o.batch = batch;
  o.seq = seq;
  o.dtype = "fp32";
  return sim::build_workload(sim::resolve_model(model), o);
}

// fp32 with eager attention, as calibrate builds it: the kernels the profiler can time.
inline sim::Workload eager_workload(const std::string& model, int64_t batch, int64_t seq) {
  sim::WorkloadOptions o;
  o.batch = batch;
  o.seq = seq;
  o.dtype = "fp32";
  o.flash_attention = false;
  return sim::build_workload(sim::resolve_model(model), o);
}

// `gpus` > 1: a data-parallel plan for `gpus` ranks (replayed under mpirun -np gpus).
inline traces::Plan compile_plan(const sim::Workload& w, const sim::offload::OffloadKnobs& k, int64_t gpu_bytes = kGpuBytes,
                                 int gpus = 1) {
  const sim::offload::RankMemory mem{gpu_bytes, int64_t{1} << 34, int64_t{1} << 36};
  const traces::Plan p = sim::offload::compile_offload_plan(w, gpus, mem, k).plan;
  return traces::plan_from_json(traces::plan_to_json(p), "test-plan.json");
}

// Every chunk persistent, every activation kept: the reference the offloaded plans must match.
inline traces::Plan resident_plan(const sim::Workload& w, int gpus = 1) {
  sim::offload::OffloadKnobs k;
  k.n_persist = static_cast<int>(sim::offload::layout_for(w, k).chunks.size());
  k.n_buffer = 0;
  return compile_plan(w, k, kGpuBytes, gpus);
}

// A random valid policy (seeded): chunk size, persistent/offloaded chunks, buffers, swap,
// checkpoint, prefetch/reuse/overlap switches, CPU Adam flavour, ZeRO-Offload, DeepSpeed's
// gradient round trip and step passes, the pinned allocator.
inline sim::offload::OffloadKnobs random_knobs(const sim::Workload& w, std::mt19937& rng, int gpus = 1) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int attempt = 0; attempt < 1000; ++attempt) {
    sim::offload::OffloadKnobs k;
    const int64_t mib = int64_t{1} << 20;
    const int64_t sizes[] = {1 * mib, 2 * mib, 4 * mib};
    k.per_block_chunks = pick(0, 5) == 0;
    k.chunk_bytes = k.per_block_chunks ? 0 : sizes[pick(0, 2)];  // per-block chunks are the blocks
    const int n_chunks = static_cast<int>(sim::offload::layout_for(w, k).chunks.size());
    k.n_persist = pick(0, n_chunks - 1);
    k.n_buffer = pick(1, std::max(1, n_chunks - k.n_persist));
    const int layers = static_cast<int>(w.model.layers);
    k.n_swap = pick(0, layers);
    k.n_checkpoint = pick(0, layers - k.n_swap);
    k.swap_spacing = pick(1, 2);
    k.prefetch = pick(0, 3) != 0;
    k.buffer_reuse = pick(0, 3) != 0;
    k.cpu_adam_overlap = pick(0, 3) != 0;
    k.cpu_adam_impl = pick(0, 4) == 0 ? "torch" : "simd";
    k.persistent_gpu_adam = pick(0, 4) != 0;
    k.grad_roundtrip = pick(0, 2) == 0;
    k.step_host_passes = pick(0, 2) == 0;  // takes effect with the optimizer after backward
    k.host_fp32_params = pick(0, 4) == 0;
    const char* allocs[] = {"exact", "torch_per_chunk", "torch_flat"};
    k.pinned_alloc = allocs[pick(0, 2)];
    try {
      compile_plan(w, k, kGpuBytes, gpus);
      return k;
    } catch (const Error&) {
      // an invalid combination (e.g. too few buffers for a block): draw again
    }
  }
  throw Error("no valid random policy found");
}

// The emulated host machine (the shipped profile's) with its copies at `link_gbps` per direction
// and, for `gpus` > 1, its collectives at `net_gbps` bus bandwidth: what the runtime's throttles
// set, so a simulated schedule and a replay overlap copies alike.
inline hw::Machine host_machine(double link_gbps, int gpus = 1, double net_gbps = 0) {
  nlohmann::json j = hw::load_machine("host-emulated").json;
  for (const char* d : {"h2d", "d2h"})
    for (const char* k : {"pinned_GBps", "pageable_GBps"}) j["host_link"][d][k] = link_gbps;
  j["host_link"]["peak_GBps"] = link_gbps;
  j["gpu"]["count"] = gpus;
  if (net_gbps > 0)
    for (auto& [kind, c] : j["collectives"]["intra_node"].items())
      if (c.is_object() && c.contains("busbw_GBps")) c["busbw_GBps"] = net_gbps;
  return hw::machine_from_json(j, "host-emulated (test)");
}

}  // namespace protwin::rt::testing
