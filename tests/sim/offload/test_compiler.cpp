// The offload plan compiler: plans of every system validate on every machine, the simulated peak
// never exceeds the validated bound, a no-offload plan equals its closed form, bad knobs are
// refused with the knob and its range.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "hwmodels/hardware_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/analytic/analytic_model.h"
#include "sim/offload/compiler/block_layout.h"
#include "sim/offload/compiler/host_work.h"
#include "sim/offload/analytic/model_state_bytes.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/offload/compiler/systems.h"
#include "sim/offload/search/search.h"
#include "sim/workload/workload.h"
#include "traces/chunk_sharding.h"
#include "traces/error.h"
#include "traces/plan.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

namespace {
Workload workload(const std::string& model, int64_t batch, const std::string& dtype = "fp16") {
  WorkloadOptions o;
  o.batch = batch;
  o.dtype = dtype;
  o.flash_attention = false;
  return build_workload(find_model(model), o);
}
}  // namespace

namespace {
// The machine without its host thread (the device timeline's closed forms).
hw::Machine without_host_dispatch(hw::Machine m) {
  m.host_dispatch.enabled = false;
  return m;
}
}  // namespace

TEST_CASE("plans of every system on every machine validate, and the simulated peak stays under the bound") {
  for (const auto& machine : hw::machine_names()) {
    const hw::HardwareCostModel cost(hw::load_machine(machine));
    for (const auto& sys : systems()) {
      SearchOptions o;
      o.system = sys.name;
      o.gpus = cost.machine().gpu.count;
      o.batch = 2;
      o.simulate_top = 2;
      const SearchResult r = search_policy(find_model("gpt2-small"), cost, o);
      INFO(machine << " / " << sys.name);
      REQUIRE(r.found);
      const traces::ValidationResult v = traces::validate(r.best_plan.plan);
      for (const auto& pool : r.best_report.pools) {
        const auto it = std::find_if(v.pools.begin(), v.pools.end(), [&](const auto& p) { return p.name == pool.name; });
        REQUIRE(it != v.pools.end());
        REQUIRE(pool.peak <= it->high_water);
        REQUIRE(it->high_water <= it->capacity);
      }
    }
  }
}

TEST_CASE("random valid ProTrain settings compile to valid plans that simulate within their bound") {
  const hw::HardwareCostModel cost(hw::load_machine("a100-server"));
  const Workload w = workload("gpt2-1b", 4);
  const ChunkLayout layout = layout_for(w, OffloadKnobs{});
  const int chunks = static_cast<int>(layout.chunks.size()), layers = static_cast<int>(w.model.layers);
  uint64_t seed = 12345;
  auto next = [&](int n) {  // deterministic LCG, no unseeded randomness in tests
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((seed >> 33) % static_cast<uint64_t>(n));
  };
  int valid = 0;
  for (int i = 0; i < 30; ++i) {
    OffloadKnobs k;
    k.n_persist = next(chunks + 1);
    const int offloaded = chunks - k.n_persist;  // a block may need 2 buffers (tied head + its own)
    k.n_buffer = offloaded >= 2 ? 2 + next(std::min(3, offloaded - 1)) : 1;
    k.n_swap = next(layers + 1);
    k.n_checkpoint = next(layers - k.n_swap + 1);
    k.swap_spacing = 1 + next(3);
    k.buffer_reuse = next(2) == 0;
    k.cpu_adam_overlap = next(2) == 0;
    INFO("setting " << i << ": " << k.to_json().dump());
    const CompiledPlan p = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), k);
    traces::ValidationResult v;
    try {
      v = traces::validate(p.plan);
    } catch (const Error& e) {  // a setting may not fit; then it must say so, naming the pool
      REQUIRE_THAT(e.what(), Catch::Contains("pool gpu over capacity"));
      continue;
    }
    ++valid;
    const traces::Report r = PlanSimulator(cost).run(p.plan);
    REQUIRE(r.pool("gpu")->peak <= v.pools[0].high_water);
    // Every block runs forward once and backward once; CKPT layers recompute once.
    int fwd = 0, bwd = 0, rec = 0;
    for (const auto& op : p.plan.ops) {
      fwd += op.kind == traces::OpKind::kForward;
      bwd += op.kind == traces::OpKind::kBackward;
      rec += op.kind == traces::OpKind::kRecompute;
    }
    REQUIRE(fwd == static_cast<int>(w.blocks.size()));
    REQUIRE(bwd == static_cast<int>(w.blocks.size()));
    REQUIRE(rec == k.n_checkpoint);
  }
  REQUIRE(valid >= 20);
}

TEST_CASE("without offload (DDP, 1 GPU) the iteration is the sum of the compute ops (closed form)") {
  // The device timeline's closed form: no host thread (DESIGN §4.1 has its own tests).
  const hw::HardwareCostModel cost(without_host_dispatch(hw::load_machine("a100-server")));
  const Workload w = workload("gpt2-small", 4);
  const CompiledPlan p = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), base_knobs("ddp"));
  SimTime expected;
  for (const auto& op : p.plan.ops) {
    REQUIRE(op.stream == "compute");  // nothing to copy, nothing to gather on one GPU
    expected += cost.cost(op, p.plan).stream_time();
  }
  REQUIRE(PlanSimulator(cost).run(p.plan).iteration == expected);
}

namespace {
// The next power of two >= x (PyTorch's CachingHostAllocator: c10::llvm::PowerOf2Ceil).
int64_t pow2_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// One rank's host bytes (pinned + pageable pools) of a system's plan with every chunk offloaded.
int64_t host_bytes(const CompiledPlan& p) {
  int64_t host = 0;
  for (const auto& pool : p.plan.pools)
    if (pool.name != "gpu") host += pool.initial.n;
  return host;
}
}  // namespace

TEST_CASE("host bytes per parameter: 14 for chunk reuse (ProTrain, Gemini), 16 for FSDP, 20 for DeepSpeed stage 3 before their pinned allocators") {
  // fp16 params + fp32 master, m, v (12 B) on the host; the gradient reuses the fp16 chunk (ProTrain,
  // Colossal-AI) or lands in DeepSpeed's pinned fp16 flat buffer and fp32 sub-group buffer (+6 B;
  // 20 B/param, DeepSpeed issue #846's "10B ... about 200 GB"). FSDP keeps the fp32 flat parameter
  // (it is the master), an fp32 CPU gradient and m, v: 16 B. Pinned + pageable, 1 GPU, all offloaded.
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  for (const auto& [system, per_param] :
       {std::pair{"protrain", 14}, {"colossalai", 14}, {"fsdp", 16}, {"deepspeed", 20}}) {
    OffloadKnobs k = base_knobs(system);
    k.n_persist = 0;
    k.pinned_alloc = "exact";
    const CompiledPlan p = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), k);
    int64_t elems = 0;
    for (const auto& c : p.chunks->chunks) elems += c.used_elems;
    INFO(system);
    CHECK(elems == 124439808);  // gpt2-small, tied embeddings counted once
    CHECK(host_bytes(p) == int64_t{per_param} * elems);
    CHECK(p.plan.meta["pinned_slack_bytes"] == 0);
  }
}

TEST_CASE("pinned memory through PyTorch's caching host allocator: every block rounded up to a power of two") {
  // CachingHostAllocator.cpp: roundSize = PowerOf2Ceil(size). A 20.4 GiB request pins 32 GiB (as
  // reported in sglang PR #36562); exact powers stay as they are.
  CHECK(torch_pinned_reserve(0) == 0);
  CHECK(torch_pinned_reserve(1) == 1);
  CHECK(torch_pinned_reserve(int64_t{1} << 30) == int64_t{1} << 30);
  CHECK(torch_pinned_reserve((int64_t{1} << 30) + 1) == int64_t{1} << 31);
  CHECK(torch_pinned_reserve(static_cast<int64_t>(20.4 * (int64_t{1} << 30))) == int64_t{32} << 30);

  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  for (int gpus : {1, 4}) {
    INFO(gpus << " GPU(s)");
    const RankMemory mem = rank_memory(cost.machine(), gpus);
    SECTION("DeepSpeed stage 3: per-parameter partitions, two flat fp16 buffers, fp32 sub-group grads") {
      const CompiledPlan p = compile_offload_plan(w, gpus, mem, base_knobs("deepspeed"));
      int64_t parts = 0, per_param_blocks = 0, chunk_host = 0;
      for (const auto& c : p.chunks->chunks) {
        chunk_host += ((c.used_elems * 2 + gpus - 1) / gpus) + (c.used_elems * 6 + gpus - 1) / gpus +
                      (c.used_elems * 12 + gpus - 1) / gpus;
        for (const auto& t : c.tensors) {
          const int64_t part = (t.numel + gpus - 1) / gpus;
          parts += part;
          per_param_blocks += pow2_ceil(2 * part);
        }
      }
      REQUIRE(parts < kDeepSpeedSubGroupElems);  // one sub-group
      const int64_t slack = per_param_blocks + 2 * (pow2_ceil(2 * parts) - 2 * parts) + (pow2_ceil(4 * parts) - 4 * parts);
      CHECK(p.plan.meta["pinned_slack_bytes"] == slack);
      CHECK(host_bytes(p) == chunk_host + slack);
    }
    SECTION("FSDP: each unit's fp32 flat parameter and fp32 CPU gradient pinned on their own") {
      const CompiledPlan p = compile_offload_plan(w, gpus, mem, base_knobs("fsdp"));
      int64_t slack = 0, chunk_host = 0;
      for (const auto& c : p.chunks->chunks) {
        const int64_t fp32 = 4 * ((c.used_elems + gpus - 1) / gpus);  // fp32 shard of the flat parameter
        slack += 2 * (pow2_ceil(fp32) - fp32);
        // the fp32 parameter shard (the master), the fp32 gradient, Adam's m and v
        chunk_host += fp32 + (c.used_elems * 4 + gpus - 1) / gpus + (c.used_elems * 8 + gpus - 1) / gpus;
      }
      CHECK(p.plan.meta["pinned_slack_bytes"] == slack);
      CHECK(host_bytes(p) == chunk_host + slack);
    }
  }
}

TEST_CASE("DeepSpeed's step passes: an overflow scan, then per sub-group unscale, Adam, fp16 copy, all on the critical path") {
  // stage3.py step(): has_overflow reads the fp16 grads (8 B/param with the isinf/isnan masks),
  // unscale_and_clip_grads multiplies each fp32 grad (8 B), the fp16 partition is copied from the
  // updated fp32 master (6 B). They run after backward on the CPU optimizer's stream, so the
  // iteration grows by exactly their summed cost.
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 2);
  for (int gpus : {1, 4}) {
    INFO(gpus << " GPU(s)");
    OffloadKnobs k = base_knobs("deepspeed");
    REQUIRE(k.step_host_passes);
    const CompiledPlan p = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), k);
    int64_t params = 0;
    for (const auto& c : p.chunks->chunks) params += (c.used_elems + gpus - 1) / gpus;
    int64_t scan = 0, unscale = 0, copy = 0;
    SimTime passes;
    for (const auto& op : p.plan.ops) {
      if (op.kind != traces::OpKind::kHostPass) continue;
      const std::string what = traces::to_string(op.sub_kind);
      (what == "overflow_scan" ? scan : what == "unscale" ? unscale : copy) += op.work.bytes;
      passes += cost.cost(op, p.plan).stream_time();
      if (what == "unscale") {  // the Adam of the same chunk waits for it, the copy follows it
        const auto adam = std::find_if(p.plan.ops.begin(), p.plan.ops.end(), [&](const traces::Op& a) {
          return a.kind == traces::OpKind::kAdamCpu && a.chunk == op.chunk;
        });
        REQUIRE(adam != p.plan.ops.end());
        CHECK(std::find(adam->deps.begin(), adam->deps.end(), op.id) != adam->deps.end());
      }
      if (what == "fp16_copy") {
        const traces::Op& adam = p.plan.ops[static_cast<size_t>(op.deps.at(0))];
        CHECK(adam.kind == traces::OpKind::kAdamCpu);
        CHECK(adam.chunk == op.chunk);
      }
    }
    CHECK(scan == 8 * params);
    CHECK(unscale == 8 * params);
    CHECK(copy == 6 * params);
    OffloadKnobs none = k;
    none.step_host_passes = false;
    const CompiledPlan q = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), none);
    CHECK(PlanSimulator(cost).run(p.plan).iteration - PlanSimulator(cost).run(q.plan).iteration == passes);
  }
}

TEST_CASE("an unknown pinned_alloc is refused with the valid values") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  OffloadKnobs k = base_knobs("protrain");
  k.pinned_alloc = "pow2";
  REQUIRE_THROWS_WITH(compile_offload_plan(workload("gpt2-small", 1), 1, rank_memory(cost.machine(), 1), k),
                      Catch::Contains("knob pinned_alloc=\"pow2\": expected one of \"exact\", \"torch_per_chunk\", \"torch_flat\""));
}

TEST_CASE("DeepSpeed's gradient path copies each gradient three times and blocks the next backward") {
  // stage3.py partition_grads: D2H into the pinned fp16 buffer, H2D back for the norm, a blocking
  // D2H into a pageable fp16 temporary, a CPU cast into the fp32 gradient (read 2 B, write 4 B).
  // Device and link times only: no host thread (its launches would add to the bound below).
  const hw::HardwareCostModel cost(without_host_dispatch(hw::load_machine("rtx3090-server")));
  const Workload w = workload("gpt2-small", 2);
  OffloadKnobs k = base_knobs("deepspeed");
  REQUIRE(k.grad_roundtrip);
  const CompiledPlan p = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), k);
  int64_t used = 0;
  for (const auto& c : p.chunks->chunks) used += c.used_elems * 2;
  int64_t pinned_d2h = 0, pageable_d2h = 0, back = 0, cast = 0;
  std::vector<int> casts;
  for (const auto& op : p.plan.ops) {
    const std::string what = traces::to_string(op.sub_kind);
    if (op.kind == traces::OpKind::kD2H && what == "grad_chunk") pinned_d2h += op.work.bytes;
    if (op.kind == traces::OpKind::kD2H && what == "grad_fp32") {
      pageable_d2h += op.work.bytes;
      CHECK(op.pinned == std::optional<bool>(false));
    }
    if (op.kind == traces::OpKind::kH2D && what == "grad_roundtrip") back += op.work.bytes;
    if (op.kind == traces::OpKind::kHostCast) {
      cast += op.work.bytes;
      casts.push_back(op.id);
    }
  }
  CHECK(pinned_d2h == used);
  CHECK(back == used);
  CHECK(pageable_d2h == used);
  CHECK(cast == 3 * used);
  // Every cast but the last block's is waited for by a backward op.
  int waited = 0;
  for (int id : casts)
    for (const auto& op : p.plan.ops)
      if (op.kind == traces::OpKind::kBackward && std::find(op.deps.begin(), op.deps.end(), id) != op.deps.end()) ++waited;
  CHECK(waited == static_cast<int>(casts.size()) - 1);
  // It costs time, and no more than every extra copy and cast run one after another.
  OffloadKnobs direct = k;
  direct.grad_roundtrip = false;
  const CompiledPlan q = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), direct);
  const SimTime with = PlanSimulator(cost).run(p.plan).iteration;
  const SimTime without = PlanSimulator(cost).run(q.plan).iteration;
  double extra_s = 0;  // the copies at their slower, both-directions rate
  for (const auto& op : p.plan.ops) {
    const std::string what = traces::to_string(op.sub_kind);
    const double bytes = static_cast<double>(op.work.bytes);
    if (op.kind == traces::OpKind::kHostCast) extra_s += cost.host_cast_seconds(bytes);
    if (what == "grad_roundtrip") extra_s += cost.copy_seconds(bytes, hw::CopyDirection::kH2D, true, true);
    if (what == "grad_fp32") extra_s += cost.copy_seconds(bytes, hw::CopyDirection::kD2H, false, true);
  }
  INFO("with " << with.seconds() << " s, without " << without.seconds() << " s, extra work " << extra_s << " s");
  CHECK(with > without);
  CHECK(with.seconds() <= without.seconds() + extra_s);
}

TEST_CASE("FSDP moves fp32 over PCIe: each fetch and each gradient offload is 4 B per parameter, cast on the GPU") {
  // flat_param.py: _local_shard (fp32, pinned) .to(device) then copy_ into the fp16 _mp_shard;
  // _cpu_grad (fp32).copy_(grad, non_blocking=True), which ATen converts on the GPU first.
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 2);
  for (int gpus : {1, 4}) {
    INFO(gpus << " GPU(s)");
    const CompiledPlan fsdp = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), base_knobs("fsdp"));
    std::map<int, int64_t> elems;
    for (const auto& c : fsdp.chunks->chunks) elems[c.id] = (c.used_elems + gpus - 1) / gpus;
    int fetches = 0, offloads = 0;
    for (const auto& op : fsdp.plan.ops) {
      const std::string what = traces::to_string(op.sub_kind);
      if (what != "param_chunk" && what != "grad_chunk" && what != "partial_grad_chunk") continue;
      (what == "param_chunk" ? fetches : offloads) += 1;
      CHECK(op.work.bytes == 4 * elems.at(op.chunk));
      // the fp32 staging tensor on the GPU lives exactly as long as the copy
      int64_t staged = 0;
      for (const auto& m : op.mem)
        if (m.pool == "gpu" && m.tensor < 0) staged += m.delta_bytes;
      CHECK(staged == 0);
    }
    CHECK(fetches >= 2 * static_cast<int>(fsdp.chunks->chunks.size()) - 1);  // forward and backward
    CHECK(offloads >= static_cast<int>(fsdp.chunks->chunks.size()));
    // Any other system moves the chunk's dtype: 2 B per parameter.
    const CompiledPlan ds = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), base_knobs("deepspeed"));
    for (const auto& op : ds.plan.ops)
      if (op.kind == traces::OpKind::kH2D && op.sub_kind == traces::OpSubKind::kParamChunk)
        CHECK(op.work.bytes == 2 * ((ds.chunks->chunks[static_cast<size_t>(op.chunk)].used_elems + gpus - 1) / gpus));
  }
}

TEST_CASE("per-block systems gather one block per chunk, each chunk sized to its block") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  const CompiledPlan p = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), base_knobs("deepspeed"));
  // gpt2-small: the embedding (wte + wpe), 12 layers, the head's final norm (lm_head is tied).
  REQUIRE(p.chunks->chunks.size() == 14);
  for (size_t b = 0; b < w.blocks.size(); ++b) {
    INFO(w.blocks[b].name);
    REQUIRE(p.chunks->block_chunks[b].size() == 1);
    const int c = p.chunks->block_chunks[b][0];
    CHECK(p.chunks->chunks[static_cast<size_t>(c)].used_elems == w.blocks[b].param_count);
    CHECK(p.plan.chunks[static_cast<size_t>(c)].bytes.n == 2 * w.blocks[b].param_count);
  }
  OffloadKnobs k = base_knobs("fsdp");
  k.chunk_bytes = 64 << 20;
  REQUIRE_THROWS_WITH(compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), k),
                      Catch::StartsWith("knob chunk_bytes=67108864: this system gathers one block at a time"));
}

TEST_CASE("DeepSpeed 0.12.1's fetch: a blocking copy per parameter, and across ranks its two torch.cat passes, and its gradient passes") {
  // Oracle: counts and bytes from deepspeed/runtime/zero/partition_parameters.py at v0.12.1
  // (sim/offload/compiler/host_work.h): per fetch, p.ds_tensor.to(device) per parameter (the host waits),
  // torch.cat into the send buffer (the shard) and one torch.cat per parameter in
  // AllGatherCoalescedHandle.wait (the whole parameter), each read and written in fp16.
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  for (const int64_t gpus : {int64_t{1}, int64_t{4}}) {
    INFO(gpus << " GPUs");
    const CompiledPlan p = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), base_knobs("deepspeed"));
    int fetches = 0, computes = 0;
    for (const auto& op : p.plan.ops) {
      if (op.kind == traces::OpKind::kH2D && op.sub_kind == traces::OpSubKind::kParamChunk) {
        ++fetches;
        size_t blk = 0;
        while (blk < w.blocks.size() &&
               (p.chunks->block_chunks[blk].empty() || p.chunks->block_chunks[blk][0] != op.chunk))
          ++blk;
        REQUIRE(blk < w.blocks.size());
        CHECK(op.host.copies == static_cast<int64_t>(w.blocks[blk].params.size()) - 1);
        CHECK(op.host_sync);
      }
      if (op.kind != traces::OpKind::kForward && op.kind != traces::OpKind::kBackward) continue;
      const Block& bl = w.blocks[static_cast<size_t>(op.block)];
      const int64_t params = static_cast<int64_t>(bl.params.size());
      double cat_bytes = 0;
      int cats = 0;
      const traces::KernelSet& ks = p.plan.kernels_of(op);  // the fetch's cat is the set's last kernel
      for (const auto& k : ks)
        if (k.sig.kind == "elementwise" && k.sig.shape[0] == bl.param_count && k.bytes > 0 && &k == &ks.back())
          ++cats, cat_bytes = k.bytes;
      if (op.kind == traces::OpKind::kBackward) {
        // stage3.py's IPG bucket copy and reduce_scatter_coalesced's torch.cat and div_ (host_work.h
        // grad_reduce_kernels): three fp16 passes over the block's gradient, first after its own kernels.
        const size_t first = ks.size() - 3 - (gpus > 1 ? 1 : 0);
        for (size_t i = first; i < first + 3; ++i) {
          CHECK(ks[i].sig.kind == "elementwise");
          CHECK(ks[i].bytes == Approx(2.0 * 2 * bl.param_count));
        }
      }
      const int64_t eager = op.host.eager_ops;
      const int64_t base = params + (op.kind == traces::OpKind::kBackward ? params : 0);
      if (gpus == 1) {
        CHECK(eager == base);
      } else {
        ++computes;
        CHECK(eager == base + 1 + params);
        REQUIRE(cats == 1);
        CHECK(cat_bytes == Approx(2.0 * 2 * (bl.param_count + (bl.param_count + gpus - 1) / gpus)));
      }
    }
    CHECK(fetches >= 2 * 14 - 1);
    if (gpus > 1) CHECK(computes == 2 * 14);
  }
  // Other systems fetch whole chunks: no per-parameter copies.
  const CompiledPlan pt = compile_offload_plan(w, 4, rank_memory(cost.machine(), 4), base_knobs("protrain"));
  for (const auto& op : pt.plan.ops)
    if (op.kind == traces::OpKind::kH2D) CHECK((op.host.empty() && !op.host_sync));
}

TEST_CASE("a swapped layer's copy is done before the forward swap_spacing layers later, and the analytic peak counts the copies in flight") {
  // Every layer SWAP: block_layout packs them 1 apart whatever the spacing, while the forward of
  // block b waits for the swap-out of block b - swap_spacing; with a spacing of 3 the copies of the
  // 2 SWAP layers in between may still be in flight.
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  OffloadKnobs k;
  k.n_swap = static_cast<int>(w.model.layers);
  k.swap_spacing = 3;
  REQUIRE(effective_swap_spacing(k.n_swap, 0, 3) == 1);
  REQUIRE(effective_swap_spacing(4, 8, 3) == 3);
  REQUIRE(effective_swap_spacing(4, 4, 3) == 2);
  REQUIRE(effective_swap_spacing(0, 4, 3) == 1);
  const CompiledPlan p = compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), k);
  std::map<int, int> swap_out, forward;  // block -> op
  for (const auto& op : p.plan.ops) {
    if (op.kind == traces::OpKind::kD2H && op.sub_kind == traces::OpSubKind::kActivation) swap_out[op.block] = op.id;
    if (op.kind == traces::OpKind::kForward) forward[op.block] = op.id;
  }
  REQUIRE(swap_out.size() == static_cast<size_t>(w.model.layers));
  for (const auto& [blk, so] : swap_out) {
    if (!forward.count(blk + 3)) continue;
    const auto& deps = p.plan.ops[static_cast<size_t>(forward[blk + 3])].deps;
    CHECK(std::find(deps.begin(), deps.end(), so) != deps.end());
  }
  // Analytic peak: two layers' saved activations more than with a spacing of 1 (same modes).
  const ChunkLayout L = layout_for(w, k);
  const WorkloadTimes t = workload_times(w, L, cost, 1, k);
  const auto modes = block_layout(static_cast<int>(w.model.layers), k.n_swap, 0, 3);
  REQUIRE(modes == block_layout(static_cast<int>(w.model.layers), k.n_swap, 0, 1));
  OffloadKnobs tight = k;
  tight.swap_spacing = 1;
  const double alpha = 1.0 + cost.machine().gpu.allocator.fragmentation_fraction;
  CHECK(static_cast<double>(analytic_estimate(t, k, modes).peak_gpu_bytes -
                            analytic_estimate(t, tight, modes).peak_gpu_bytes) ==
        Approx(alpha * 2.0 * static_cast<double>(w.blocks[1].saved_bytes)).margin(2.0));
}

TEST_CASE("bad knobs name the knob and its valid range") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  const RankMemory mem = rank_memory(cost.machine(), 1);
  OffloadKnobs k;
  k.n_persist = 99;
  REQUIRE_THROWS_WITH(compile_offload_plan(w, 1, mem, k),
                      Catch::StartsWith("knob n_persist=99: valid range is [0, "));
  k = OffloadKnobs{};
  k.n_swap = 10;
  k.n_checkpoint = 5;
  REQUIRE_THROWS_WITH(compile_offload_plan(w, 1, mem, k),
                      "knobs n_swap=10, n_checkpoint=5: n_swap + n_checkpoint must be in [0, 12] (the number of layers)");
  k = OffloadKnobs{};
  k.n_buffer = 1;  // the tied head needs its own chunk and the embedding's at once
  REQUIRE_THROWS_WITH(compile_offload_plan(w, 1, mem, k), Catch::StartsWith("knob n_buffer=1: valid range is [2, "));
  REQUIRE_THROWS_WITH(find_system("megatron"),
                      "--system: unknown system 'megatron'; known systems: protrain, deepspeed, zero-offload, colossalai, fsdp, ddp");
  // In a policy file: the file and the JSON pointer.
  REQUIRE_THROWS_WITH(knobs_from_json(nlohmann::json{{"system", "megatron"}}, "pol.json"),
                      "pol.json:/system: expected one of protrain, deepspeed, zero-offload, colossalai, fsdp, ddp, got \"megatron\"");
  REQUIRE_THROWS_WITH(knobs_from_json(nlohmann::json{{"cpu_adam_impl", "avx"}}, "pol.json"),
                      "pol.json:/cpu_adam_impl: expected one of simd, torch, got \"avx\"");
  WorkloadOptions o;
  o.batch = 0;
  REQUIRE_THROWS_WITH(build_workload(find_model("gpt2-small"), o), Catch::Contains("--batch"));
}

TEST_CASE("knob arguments over a policy file: numbers as JSON, names as strings, errors name their source") {
  const nlohmann::json policy = {{"system", "protrain"}, {"n_buffer", 3}, {"n_persist", 1}, {"cpu_adam_impl", "torch"}};
  const OffloadKnobs k = knobs_from_args(policy, "pol.json", {"n_persist=2", "system=deepspeed", "prefetch=false"});
  // DeepSpeed's switches (systems.cpp) with the file's n_buffer and cpu_adam_impl, --knob's n_persist
  // and prefetch; every other knob at DeepSpeed's default.
  nlohmann::json want = base_knobs("deepspeed").to_json();
  want.update({{"n_buffer", 3}, {"n_persist", 2}, {"cpu_adam_impl", "torch"}, {"prefetch", false}});
  CHECK(k.to_json() == want);
  CHECK(k.per_block_chunks);
  CHECK(k.host_grad_bytes == 6);
  CHECK(k.n_persist == 2);
  CHECK(k.n_buffer == 3);
  // Without a file, "--knob" names them; a value that is no integer is kept as a string and refused.
  CHECK(knobs_from_args(nlohmann::json::object(), "", {}).to_json() == OffloadKnobs{}.to_json());
  REQUIRE_THROWS_WITH(knobs_from_args(nlohmann::json::object(), "", {"n_persist=x"}),
                      "--knob n_persist=x:/n_persist: expected an integer, got string \"x\"");
  REQUIRE_THROWS_WITH(knobs_from_args(policy, "pol.json", {"n_persist"}), "--knob 'n_persist': expected name=value");
  // The checks that need the workload: their errors are prefixed with the same source.
  const Workload w = workload("gpt2-small", 1);
  auto check = [&](const OffloadKnobs& kn) { check_knobs(w, layout_for(w, kn), kn, 1); };
  REQUIRE_THROWS_WITH(knobs_from_args(policy, "pol.json", {"n_persist=99"}, check),
                      Catch::StartsWith("pol.json n_persist=99: knob n_persist=99: valid range is [0, "));
  CHECK(knobs_from_args(nlohmann::json::object(), "", {"n_checkpoint=2"}, check).n_checkpoint == 2);
}

TEST_CASE("on N GPUs a persistent chunk's device Adam updates its 1/N shard, which an all_gather then completes") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  constexpr int kGpus = 4;
  OffloadKnobs k = base_knobs("protrain");
  k.chunk_bytes = int64_t{128} << 20;
  const int n = static_cast<int>(layout_for(w, k).chunks.size());
  k.n_persist = n - 1;
  k.n_buffer = 1;
  const CompiledPlan p = compile_offload_plan(w, kGpus, rank_memory(cost.machine(), kGpus), k);
  const std::vector<bool> sharded = traces::device_sharded_chunks(p.plan);
  REQUIRE(sharded.size() == static_cast<size_t>(n));
  for (int c = 0; c < n; ++c) {
    INFO("chunk " << c);
    CHECK(sharded[static_cast<size_t>(c)] == (c < k.n_persist));
    int adam = -1, gathers_after_adam = 0, scatters = 0;
    for (const traces::Op& op : p.plan.ops) {
      if (op.chunk != c) continue;
      if (op.kind == traces::OpKind::kReduceScatter) ++scatters;
      if (op.kind == traces::OpKind::kAdamDevice) {
        adam = op.id;
        CHECK(op.work.params == (p.chunks->chunks[static_cast<size_t>(c)].used_elems + kGpus - 1) / kGpus);
      }
      if (op.kind == traces::OpKind::kAllGather && adam >= 0 && std::count(op.deps.begin(), op.deps.end(), adam) == 1)
        ++gathers_after_adam;
    }
    CHECK(scatters == 1);
    CHECK((adam >= 0) == (c < k.n_persist));
    CHECK(gathers_after_adam == (c < k.n_persist ? 1 : 0));
  }
  CHECK_NOTHROW(traces::check_sharded_chunks_gathered(p.plan, "p.json"));
  // Without the gather the other ranks would keep stale parameters: refused, naming the adam_device.
  traces::Plan stale = p.plan;
  int adam0 = -1;
  for (traces::Op& op : stale.ops) {
    if (op.kind == traces::OpKind::kAdamDevice && op.chunk == 0) adam0 = op.id;
    if (op.kind == traces::OpKind::kAllGather && op.chunk == 0 && adam0 >= 0) op.deps.clear();
  }
  REQUIRE(adam0 >= 0);
  REQUIRE_THROWS_WITH(traces::check_sharded_chunks_gathered(stale, "p.json"),
                      Catch::StartsWith("p.json:/ops/" + std::to_string(adam0) +
                                        ": adam_device updates this rank's shard of chunk 0 (its gradient is "
                                        "reduce-scattered), but no all_gather of the chunk follows it"));
  // Replicated optimizer states: DDP (all-reduce, every rank the whole chunk), ZeRO-Offload (host
  // Adam), and any 1-GPU plan.
  OffloadKnobs zero_offload = k;
  zero_offload.persistent_gpu_adam = false;
  for (const CompiledPlan& q : {compile_offload_plan(w, kGpus, rank_memory(cost.machine(), kGpus), base_knobs("ddp")),
                                compile_offload_plan(w, kGpus, rank_memory(cost.machine(), kGpus), zero_offload),
                                compile_offload_plan(w, 1, rank_memory(cost.machine(), 1), k)}) {
    const std::vector<bool> none = traces::device_sharded_chunks(q.plan);
    CHECK(std::count(none.begin(), none.end(), true) == 0);
  }
}

TEST_CASE("Colossal-AI 0.3.3 Gemini's grad_handle: div_ and the inf/nan checks per reduced chunk, the host waits") {
  // Oracle: counts and bytes from colossalai/zero/gemini/gemini_ddp.py GeminiDDP.grad_handle and
  // chunk/chunk.py at v0.3.3 (sim/offload/compiler/host_work.h): per chunk whose gradient is complete,
  // cuda_shard.div_ (read, write), isinf + any and isnan + any (read the shard, one byte per element
  // written and read) with an .item() each (the host waits), then the offloaded gradient's blocking
  // cpu_shard.copy_. The bytes are the backward ops' against the same plan without the system's work.
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server"));
  const Workload w = workload("gpt2-small", 1);
  const int64_t gpus = 4;
  OffloadKnobs k = base_knobs("colossalai");
  const CompiledPlan p = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), k);
  k.host_work = "";
  const CompiledPlan bare = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), k);
  const int64_t e = 2;  // fp16 chunks
  int reduces = 0, offloads = 0;
  double expected = 0;
  for (const auto& op : p.plan.ops) {
    if (op.kind == traces::OpKind::kReduceScatter) {
      ++reduces;
      CHECK(op.host.copies == 2);
      CHECK(op.host_sync);
      const int64_t shard = (p.chunks->chunks[static_cast<size_t>(op.chunk)].used_elems + gpus - 1) / gpus;
      expected += static_cast<double>(shard) * (2 * e + 2 * (e + 1) + 2);
    }
    if (op.kind == traces::OpKind::kD2H && op.sub_kind == traces::OpSubKind::kGradChunk) {
      ++offloads;
      CHECK(op.host_sync);
    }
  }
  auto backward_bytes = [](const CompiledPlan& c) {
    double b = 0;
    for (const auto& op : c.plan.ops)
      if (op.kind == traces::OpKind::kBackward) b += static_cast<double>(op.work.bytes);
    return b;
  };
  CHECK(reduces == static_cast<int>(p.chunks->chunks.size()));
  CHECK(offloads >= 1);
  CHECK(backward_bytes(p) - backward_bytes(bare) == Approx(expected).margin(64));
  // The other systems' reduces carry no such work.
  const CompiledPlan pt = compile_offload_plan(w, gpus, rank_memory(cost.machine(), gpus), base_knobs("protrain"));
  for (const auto& op : pt.plan.ops)
    if (op.kind == traces::OpKind::kReduceScatter) {
      CHECK(op.host.empty());
      CHECK_FALSE(op.host_sync);
    }
}

TEST_CASE("host work beyond what a plan op holds is refused with the op and the limit") {
  traces::Op op;
  op.id = 7;
  op.kind = traces::OpKind::kForward;
  add_host_work(op, {traces::HostWork::kMax - 1, 3, 0, false});
  CHECK(op.host.hooks == traces::HostWork::kMax - 1);
  add_host_work(op, {1, 0, 0, false});  // 65535 fits
  CHECK(op.host.hooks == traces::HostWork::kMax);
  CHECK_THROWS_WITH(add_host_work(op, {1, 0, 0, false}), Catch::Contains("65536 host calls") && Catch::Contains("at most 65535"));
  CHECK(op.host.hooks == traces::HostWork::kMax);  // a refused addition leaves the op as it was
}
