#include "sim/offload/compiler/offload_compiler.h"

#include <algorithm>

#include "sim/engine/op_builder.h"
#include "sim/offload/compiler/block_layout.h"
#include "sim/offload/compiler/host_work.h"
#include "sim/offload/analytic/model_state_bytes.h"
#include "traces/error.h"
#include "traces/units.h"

namespace protwin::sim::offload {

namespace {

using traces::MemAt;
using traces::Op;
using traces::OpKind;
using traces::OpSubKind;

// Chunks hold parameters in the compute dtype (fp16/bf16 for mixed precision, fp32 otherwise).
int chunk_elem_bytes(const Workload& w) { return traces::dtype_bytes(w.options.dtype); }

}  // namespace

int64_t optimizer_bytes_per_param(const std::string& dtype) {
  // Adam's m and v in fp32, plus an fp32 master copy when the parameters are low precision.
  return dtype == "fp32" ? 8 : 12;
}

ChunkLayout layout_for(const Workload& w, const OffloadKnobs& k) {
  const auto params = parameter_layout(w.model);  // the workload's blocks hold the same tensors
  if (k.per_block_chunks) {
    // One gather unit per block, sized to it (DeepSpeed fetches per submodule, FSDP per unit).
    PROTWIN_CHECK(k.chunk_bytes == 0, "knob chunk_bytes=", k.chunk_bytes,
                  ": this system gathers one block at a time (per_block_chunks), so its chunks are "
                  "the blocks; leave chunk_bytes at 0");
    return pack_per_block(params, chunk_elem_bytes(w));
  }
  const int64_t chunk_bytes = k.chunk_bytes > 0 ? k.chunk_bytes : choose_chunk_bytes(params, chunk_elem_bytes(w));
  return pack_chunks(params, chunk_bytes, chunk_elem_bytes(w));
}

void check_knobs(const Workload& w, const ChunkLayout& layout, const OffloadKnobs& k, int gpus) {
  const int n_chunks = static_cast<int>(layout.chunks.size());
  const int layers = static_cast<int>(w.model.layers);
  PROTWIN_CHECK(gpus >= 1, "--gpus: expected at least 1, got ", gpus);
  PROTWIN_CHECK(k.n_persist >= 0 && k.n_persist <= n_chunks, "knob n_persist=", k.n_persist,
                ": valid range is [0, ", n_chunks, "] (the model has ", n_chunks, " chunks of ",
                layout.chunk_bytes, " bytes)");
  if (k.offload && k.n_persist < n_chunks) {
    // A block needs all its non-persistent chunks at once; more buffers than such chunks are idle.
    const int need = buffers_needed(layout, k.n_persist);
    PROTWIN_CHECK(k.n_buffer >= need && k.n_buffer <= n_chunks - k.n_persist, "knob n_buffer=", k.n_buffer,
                  ": valid range is [", need, ", ", n_chunks - k.n_persist, "] with n_persist=", k.n_persist,
                  " (a block needs ", need, " chunk buffer(s) at once; ", n_chunks - k.n_persist,
                  " chunks are not persistent)");
  }
  block_layout(layers, k.n_swap, k.n_checkpoint, k.swap_spacing);  // refuses n_swap + n_checkpoint > layers
  check_choice_knobs(k);
}

CompiledPlan compile_offload_plan(const Workload& w, int gpus, const RankMemory& rank_mem, const OffloadKnobs& k,
                                  const nlohmann::json& meta, int nodes, std::shared_ptr<const ChunkLayout> layout) {
  CompiledPlan out;
  out.chunks = layout ? std::move(layout) : std::make_shared<const ChunkLayout>(layout_for(w, k));
  check_knobs(w, *out.chunks, k, gpus);
  PROTWIN_CHECK(nodes >= 1 && gpus % nodes == 0, "--nodes: ", gpus, " GPU(s) do not spread evenly over ", nodes,
                " node(s)");
  const ChunkLayout& L = *out.chunks;
  const int n_chunks = static_cast<int>(L.chunks.size());
  const int n_blocks = static_cast<int>(w.blocks.size());
  const int64_t N = gpus;
  out.layer_modes = block_layout(static_cast<int>(w.model.layers), k.n_swap, k.n_checkpoint, k.swap_spacing);

  traces::Plan& plan = out.plan;
  plan.meta = meta.is_object() ? meta : nlohmann::json::object();
  plan.meta["generator"] = "protwin offload compiler";
  plan.gpus = gpus;
  if (nodes > 1) plan.nodes = nodes;
  plan.meta["batch"] = w.options.batch;
  plan.meta["seq"] = w.options.seq;
  plan.meta["model"] = w.model.name;
  plan.meta["model_spec"] = model_to_json(w.model);  // lets the runtime build the model without sim/
  plan.dtype = w.options.dtype;
  for (const char* typed : {"gpus", "nodes", "dtype"}) plan.meta.erase(typed);  // the typed fields say them
  plan.meta["knobs"] = k.to_json();
  plan.meta["chunk_bytes"] = L.chunk_bytes;
  plan.meta["n_chunks"] = n_chunks;
  plan.meta["layer_modes"] = nlohmann::json::array();
  for (ActMode m : out.layer_modes) plan.meta["layer_modes"].push_back(act_mode_name(m));
  plan.streams = {{"compute", {"gpu"}}, {"h2d", {"pinned"}}, {"d2h", {"gpu"}},
                  {"collective", {"gpu"}}, {"cpu_optim", {}}};

  // Chunks: the parameter layout the runtime rebuilds.
  for (const auto& c : L.chunks) {
    traces::ChunkSpec cs;
    cs.id = c.id;
    cs.bytes = Bytes(L.capacity_bytes(c.id));
    cs.dtype = w.options.dtype;
    for (const auto& t : c.tensors) cs.params.push_back({t.name, t.offset, t.shape});
    plan.chunks.push_back(std::move(cs));
  }

  OpBuilder b(plan);
  // Residency: a persistent chunk lives on the GPU; any other chunk has its fp16 shard in pinned
  // host memory and visits the GPU in a buffer.
  std::vector<bool> persistent(static_cast<size_t>(n_chunks));
  // shard: a rank's part of the chunk in its dtype (rank_params: its parameters); moved: what one
  // fetch copies up and one gradient offload copies down (fp32 under host_fp32_params); cap: its buffer.
  std::vector<int64_t> used(static_cast<size_t>(n_chunks)), shard(static_cast<size_t>(n_chunks)),
      rank_params(static_cast<size_t>(n_chunks)), moved(static_cast<size_t>(n_chunks)),
      cap(static_cast<size_t>(n_chunks));
  std::vector<int> host_t(static_cast<size_t>(n_chunks)), gpu_t(static_cast<size_t>(n_chunks));
  const ModelStateBytes states = model_state_bytes(L, N, k, optimizer_bytes_per_param(w.options.dtype));
  const int64_t gpu0 = states.gpu, pinned0 = states.pinned, pageable0 = states.pageable;
  plan.meta["pinned_slack_bytes"] = states.pinned_slack;
  for (int c = 0; c < n_chunks; ++c) {
    const auto& ch = L.chunks[static_cast<size_t>(c)];
    const size_t ci = static_cast<size_t>(c);
    persistent[ci] = !k.offload || c < k.n_persist;
    used[ci] = ch.used_elems * L.bytes_per_elem;
    shard[ci] = ceil_div(used[ci], N);
    rank_params[ci] = ceil_div(ch.used_elems, N);
    moved[ci] = host_param_shard(k, ch.used_elems, shard[ci], N);
    cap[ci] = L.capacity_bytes(c);
    if (persistent[ci]) {
      gpu_t[ci] = b.tensor("chunk" + std::to_string(c) + ".gpu", used[ci], traces::TensorKind::kParamChunk, "gpu");
      host_t[ci] = -1;
    } else {
      host_t[ci] = b.tensor("chunk" + std::to_string(c) + ".host", moved[ci], traces::TensorKind::kParamChunk, "pinned",
                            k.host_fp32_params ? "fp32" : w.options.dtype);
      gpu_t[ci] = b.tensor("chunk" + std::to_string(c) + ".buffer", cap[ci], traces::TensorKind::kBuffer, "");
    }
  }
  plan.pools = {{"gpu", Bytes(rank_mem.gpu_bytes), Bytes(std::min(gpu0, rank_mem.gpu_bytes))},
                {"pinned", Bytes(rank_mem.pinned_bytes), Bytes(std::min(pinned0, rank_mem.pinned_bytes))},
                {"pageable", Bytes(rank_mem.pageable_bytes), Bytes(std::min(pageable0, rank_mem.pageable_bytes))}};
  PROTWIN_CHECK(gpu0 <= rank_mem.gpu_bytes, "plan: model states kept on the GPU (", gpu0,
                " bytes) exceed GPU memory (", rank_mem.gpu_bytes, " bytes)\nhint: persist fewer chunks");
  PROTWIN_CHECK(pinned0 <= rank_mem.pinned_bytes && pageable0 <= rank_mem.pageable_bytes &&
                    (rank_mem.host_bytes == 0 || pinned0 + pageable0 <= rank_mem.host_bytes),
                "plan: offloaded model states (", pinned0 + pageable0, " bytes per rank) exceed host memory (",
                rank_mem.host_bytes, " bytes per rank)");

  // Decoder layer -> activation mode; embedding and head keep theirs.
  auto mode_of = [&](int blk) {
    const auto& bl = w.blocks[static_cast<size_t>(blk)];
    return bl.layer >= 0 ? out.layer_modes[static_cast<size_t>(bl.layer)] : ActMode::kNone;
  };
  std::vector<int> act_t(static_cast<size_t>(n_blocks)), ckpt_t(static_cast<size_t>(n_blocks), -1);
  for (int blk = 0; blk < n_blocks; ++blk) {
    const auto& bl = w.blocks[static_cast<size_t>(blk)];
    act_t[static_cast<size_t>(blk)] =
        b.tensor("act." + bl.name, bl.saved_bytes, traces::TensorKind::kActivation, "", w.options.dtype);
    if (mode_of(blk) == ActMode::kCheckpoint)
      ckpt_t[static_cast<size_t>(blk)] =
          b.tensor("ckpt." + bl.name, bl.checkpoint_bytes, traces::TensorKind::kActivation, "", w.options.dtype);
  }

  // A collective of chunk c over all ranks; across nodes it carries the ranks on each node, so the
  // cost model prices NCCL's ring per level (intra-node fabric, then the NICs), and that it is the
  // only group on its nodes (the node's whole NIC rate even when the ranks fill only part of it).
  auto collective = [&](OpKind kind, int after, int c) {
    const int ranks = static_cast<int>(N);
    const traces::CollectiveGroup group{ranks, nodes > 1 ? ranks / nodes : 0, static_cast<int16_t>(nodes > 1 ? 1 : 0),
                                        false};
    return b.add(make_op::collective(kind, "collective", used[static_cast<size_t>(c)], group), {after}, -1, c);
  };

  // Parameter tensors per chunk (per-block layouts: its block's): the per-parameter fetch work.
  std::vector<int64_t> chunk_tensors(L.chunks.size(), 0);
  for (size_t blk = 0; blk < L.block_chunks.size(); ++blk)
    for (int c : L.block_chunks[blk])
      chunk_tensors[static_cast<size_t>(c)] += static_cast<int64_t>(w.blocks[blk].params.size());
  auto fetch = [&](int c, std::vector<int> deps, const std::string& phase) {
    const size_t ci = static_cast<size_t>(c);
    const int h2d = b.add(make_op::copy(OpKind::kH2D, "h2d", moved[ci], OpSubKind::kParamChunk, true), std::move(deps), -1, c);
    b.op(h2d).work.params = rank_params[ci];
    b.op(h2d).attrs = {{"phase", phase}};
    set_host_work(b.op(h2d), fetch_host_work(k.host_work, chunk_tensors[ci]));
    b.op(h2d).reads = {host_t[ci]};
    b.mem(h2d, "gpu", cap[ci], MemAt::kStart, gpu_t[ci]);
    if (moved[ci] != shard[ci]) b.transient(h2d, "gpu", moved[ci]);  // fp32 staging, cast into the buffer
    if (N == 1) return h2d;
    return collective(OpKind::kAllGather, h2d, c);
  };

  // Chunks each block touches (ChunkLayout::block_uses). A chunk is on the GPU for a run of
  // consecutive blocks; it is released when the next block does not use it.
  const std::vector<std::vector<int>>& uses = L.block_uses;
  auto block_uses = [&](int blk, int c) {
    if (blk < 0 || blk >= n_blocks) return false;
    const auto& u = uses[static_cast<size_t>(blk)];
    return std::find(u.begin(), u.end(), c) != u.end();
  };
  // The block at which each chunk's gradient is complete (its lowest block).
  std::vector<int> min_block(static_cast<size_t>(n_chunks), n_blocks);
  for (int blk = 0; blk < n_blocks; ++blk)
    for (int c : uses[static_cast<size_t>(blk)])
      min_block[static_cast<size_t>(c)] = std::min(min_block[static_cast<size_t>(c)], blk);

  // ---------------- forward ----------------
  std::vector<int> ready(static_cast<size_t>(n_chunks), -1);  // op after which chunk c is on the GPU
  std::vector<int> fwd_fetched, fwd_release;                 // per forward fetch: chunk, release op
  std::vector<int> fetch_of(static_cast<size_t>(n_chunks), -1);  // current forward fetch of chunk c
  std::vector<int> fwd_op(static_cast<size_t>(n_blocks)), swap_out(static_cast<size_t>(n_blocks), -1);
  int prev_compute = -1;
  for (int blk = 0; blk < n_blocks; ++blk) {
    const auto& bl = w.blocks[static_cast<size_t>(blk)];
    std::vector<int> deps;
    for (int c : uses[static_cast<size_t>(blk)]) {
      const size_t ci = static_cast<size_t>(c);
      if (persistent[ci]) continue;
      if (fetch_of[ci] < 0) {
        const size_t kf = fwd_fetched.size();
        std::vector<int> fdeps;
        if (kf >= static_cast<size_t>(k.n_buffer)) {
          const int wait = fwd_release[kf - static_cast<size_t>(k.n_buffer)];
          PROTWIN_ASSERT(wait >= 0, "forward fetch ", kf, " has no free buffer");
          fdeps.push_back(wait);
        }
        if (!k.prefetch) fdeps.push_back(prev_compute);
        ready[ci] = fetch(c, fdeps, "forward");
        fetch_of[ci] = static_cast<int>(kf);
        fwd_fetched.push_back(c);
        fwd_release.push_back(-1);
      }
      deps.push_back(ready[ci]);
    }
    // A layer's swap-out must be done before the forward `swap_spacing` layers later starts (the
    // spacing the search derives so that one copy hides behind that much compute), so swapped
    // activations cannot pile up without bound whatever the copy speed. Where block_layout packs
    // SWAP layers closer than that, the copies of the SWAP layers in between may still be in
    // flight; the analytic peak counts them (analytic_model.cpp).
    const int lag = std::max(1, k.swap_spacing);
    if (blk - lag >= 0 && swap_out[static_cast<size_t>(blk - lag)] >= 0) deps.push_back(swap_out[static_cast<size_t>(blk - lag)]);
    const int f = b.add(make_op::compute(plan, OpKind::kForward, "compute", bl.forward,
                                         fetch_kernels(k.host_work, bl, N, w.options.dtype)),
                        deps, blk, -1);
    fwd_op[static_cast<size_t>(blk)] = f;
    prev_compute = f;
    Op& op = b.op(f);
    op.work.params = bl.param_count;
    op.attrs = {{"block", bl.name}, {"mode", act_mode_name(mode_of(blk))}};
    set_host_work(op, block_host_work(k.host_work, bl, false, N));
    for (int c : uses[static_cast<size_t>(blk)]) op.reads.push_back(gpu_t[static_cast<size_t>(c)]);
    b.transient(f, "gpu", bl.forward_transient_bytes);
    if (mode_of(blk) == ActMode::kCheckpoint)
      b.mem(f, "gpu", bl.checkpoint_bytes, MemAt::kEnd, ckpt_t[static_cast<size_t>(blk)]);
    else
      b.mem(f, "gpu", bl.saved_bytes, MemAt::kEnd, act_t[static_cast<size_t>(blk)]);
    if (mode_of(blk) == ActMode::kSwap) {
      const int so = b.add(make_op::copy(OpKind::kD2H, "d2h", bl.saved_bytes, OpSubKind::kActivation, true), {f}, blk, -1);
      swap_out[static_cast<size_t>(blk)] = so;
      b.op(so).reads = {act_t[static_cast<size_t>(blk)]};
      b.mem(so, "pinned", bl.saved_bytes, MemAt::kStart, act_t[static_cast<size_t>(blk)]);
      b.mem(so, "gpu", -bl.saved_bytes, MemAt::kEnd, act_t[static_cast<size_t>(blk)]);
    }
    // A run ends when the next block does not use the chunk: its buffer can be released here.
    for (int c : uses[static_cast<size_t>(blk)]) {
      const size_t ci = static_cast<size_t>(c);
      if (persistent[ci] || block_uses(blk + 1, c)) continue;
      fwd_release[static_cast<size_t>(fetch_of[ci])] = f;
      fetch_of[ci] = -1;
    }
  }
  // Buffers still holding a chunk at the end of forward (on_gpu): the last n_buffer fetched (if
  // reused); every other buffer is freed when its run ends.
  std::vector<bool> on_gpu(static_cast<size_t>(n_chunks), false);
  const size_t n_fetched = fwd_fetched.size();
  const size_t n_keep = k.buffer_reuse ? std::min(n_fetched, static_cast<size_t>(k.n_buffer)) : 0;
  for (size_t kf = 0; kf < n_fetched; ++kf) {
    const size_t ci = static_cast<size_t>(fwd_fetched[kf]);
    if (kf >= n_fetched - n_keep) on_gpu[ci] = true;
    else b.mem(fwd_release[kf], "gpu", -cap[ci], MemAt::kEnd, gpu_t[ci]);
  }

  // ---------------- backward ----------------
  // Buffers free up in the order their backward runs end (the d2h stream is in order); the k-th
  // backward fetch takes the slot of the (k - free_slots)-th release.
  std::vector<int> bwd_release;
  const int free_slots = k.n_buffer - static_cast<int>(n_keep);
  int n_bwd_fetch = 0;
  std::vector<std::pair<int, int>> persistent_grad_ready;  // (op after which the grad is reduced, chunk)
  std::vector<int> grad_offloaded, offloaded_chunk;        // final gradient offloads, in order
  std::vector<int> bwd_op(static_cast<size_t>(n_blocks));
  int last_bwd = prev_compute;
  std::vector<int> adam_cpu_ops;
  std::vector<int> blocking_host_work;  // grad_roundtrip casts the next backward waits for
  auto emit_adam_cpu = [&](int c, int after) {
    const int64_t params = rank_params[static_cast<size_t>(c)];
    // Per parameter: read fp32 master, m, v and the fp16 grad; write master, m, v, fp16 param.
    const int a = b.add(make_op::host(OpKind::kAdamCpu, "cpu_optim", params, params * 28,
                                      k.cpu_adam_impl == "torch" ? OpSubKind::kTorch : OpSubKind::kNone),
                        {after}, -1, c);
    adam_cpu_ops.push_back(a);
    return a;
  };
  for (int blk = n_blocks - 1; blk >= 0; --blk) {
    const auto& bl = w.blocks[static_cast<size_t>(blk)];
    const size_t bi = static_cast<size_t>(blk);
    std::vector<int> deps;
    const auto& u = uses[bi];
    for (auto it = u.rbegin(); it != u.rend(); ++it) {
      const int c = *it;
      const size_t ci = static_cast<size_t>(c);
      if (persistent[ci]) continue;
      if (!on_gpu[ci]) {
        std::vector<int> fdeps;
        const int wait_for = n_bwd_fetch - free_slots;
        if (wait_for >= 0) {
          PROTWIN_ASSERT(wait_for < static_cast<int>(bwd_release.size()), "backward fetch ", n_bwd_fetch,
                         " has no free buffer");
          fdeps.push_back(bwd_release[static_cast<size_t>(wait_for)]);
        } else {
          // One of the buffers freed at the end of forward: wait for that forward release.
          const int fwd_index = static_cast<int>(n_fetched) - k.n_buffer + n_bwd_fetch;
          if (fwd_index >= 0) fdeps.push_back(fwd_release[static_cast<size_t>(fwd_index)]);
        }
        if (!k.prefetch) fdeps.push_back(last_bwd);
        ready[ci] = fetch(c, fdeps, "backward");
        on_gpu[ci] = true;
        ++n_bwd_fetch;
      }
      deps.push_back(ready[ci]);
    }
    const ActMode mode = mode_of(blk);
    if (mode == ActMode::kSwap) {
      // Bring the activations back while the layer above is in backward.
      std::vector<int> sdeps = {swap_out[bi]};
      if (blk + 2 < n_blocks) sdeps.push_back(bwd_op[static_cast<size_t>(blk + 2)]);
      const int si = b.add(make_op::copy(OpKind::kH2D, "h2d", bl.saved_bytes, OpSubKind::kActivation, true), sdeps, blk, -1);
      b.op(si).reads = {act_t[bi]};
      b.mem(si, "gpu", bl.saved_bytes, MemAt::kStart, act_t[bi]);
      b.mem(si, "pinned", -bl.saved_bytes, MemAt::kEnd, act_t[bi]);
      deps.push_back(si);
    }
    if (mode == ActMode::kCheckpoint) {
      const int rc = b.add(make_op::compute(plan, OpKind::kRecompute, "compute", bl.recompute), deps, blk, -1);
      Op& op = b.op(rc);
      op.attrs = {{"block", bl.name}};
      set_host_work(op, block_host_work(k.host_work, bl, false));
      op.reads = {ckpt_t[bi]};
      for (int c : u) op.reads.push_back(gpu_t[static_cast<size_t>(c)]);
      b.transient(rc, "gpu", bl.forward_transient_bytes);
      b.mem(rc, "gpu", bl.saved_bytes, MemAt::kEnd, act_t[bi]);
    }
    deps.insert(deps.end(), blocking_host_work.begin(), blocking_host_work.end());
    blocking_host_work.clear();
    // The system's kernels around the block (host_work.h): its passes over the block's gradients
    // before their reduction, its work on each gradient chunk completed here, its fetch's last.
    std::vector<traces::Kernel> around = grad_reduce_kernels(k.host_work, bl, w.options.dtype);
    for (int c : u)
      if (!block_uses(blk - 1, c) && min_block[static_cast<size_t>(c)] == blk)
        for (auto& kk : reduced_grad_kernels(k.host_work, rank_params[static_cast<size_t>(c)], w.options.dtype))
          around.push_back(std::move(kk));
    for (auto& kk : fetch_kernels(k.host_work, bl, N, w.options.dtype)) around.push_back(std::move(kk));
    const int g = b.add(make_op::compute(plan, OpKind::kBackward, "compute", bl.backward, around), deps, blk, -1);
    bwd_op[bi] = g;
    last_bwd = g;
    {
      Op& op = b.op(g);
      op.work.params = bl.param_count;
      op.attrs = {{"block", bl.name}};
      set_host_work(op, block_host_work(k.host_work, bl, true, N));
      op.reads = {act_t[bi]};
      for (int c : u) op.reads.push_back(gpu_t[static_cast<size_t>(c)]);
    }
    b.transient(g, "gpu", bl.backward_transient_bytes);
    b.mem(g, "gpu", -bl.saved_bytes, MemAt::kEnd, act_t[bi]);
    if (mode == ActMode::kCheckpoint) b.mem(g, "gpu", -bl.checkpoint_bytes, MemAt::kEnd, ckpt_t[bi]);

    // Runs that end here: a chunk whose gradient is complete (its lowest block) is reduced,
    // offloaded and updated; a chunk used again lower down (a tied embedding) offloads its partial
    // gradient, to be accumulated on the host, and frees its buffer.
    for (auto it = u.rbegin(); it != u.rend(); ++it) {
      const int c = *it;
      const size_t ci = static_cast<size_t>(c);
      if (block_uses(blk - 1, c)) continue;
      const bool complete = min_block[ci] == blk;
      int reduced = g;
      if (N > 1 && complete) reduced = collective(k.offload ? OpKind::kReduceScatter : OpKind::kAllReduce, g, c);
      if (complete) add_host_work(b.op(reduced), reduced_grad_host_work(k.host_work));
      if (persistent[ci] && (k.persistent_gpu_adam || !k.offload)) {
        if (complete) persistent_grad_ready.emplace_back(reduced, c);
        continue;
      }
      const int off = b.add(make_op::copy(OpKind::kD2H, "d2h", moved[ci],
                                          complete ? OpSubKind::kGradChunk : OpSubKind::kPartialGradChunk, true),
                            {reduced}, -1, c);
      add_host_work(b.op(off), grad_offload_host_work(k.host_work));
      b.op(off).reads = {gpu_t[ci]};
      if (moved[ci] != shard[ci]) b.transient(off, "gpu", moved[ci]);  // cast to fp32 on the GPU before the copy
      if (!persistent[ci]) {
        b.mem(off, "gpu", -cap[ci], MemAt::kEnd, gpu_t[ci]);
        bwd_release.push_back(off);
        on_gpu[ci] = false;
      }
      int grad_on_host = off;
      if (k.grad_roundtrip && complete) {
        // DeepSpeed's grad_buffer.to(device): the pinned copy comes back up for the norm ...
        const int back = b.add(make_op::copy(OpKind::kH2D, "h2d", shard[ci], OpSubKind::kGradRoundtrip, true), {off}, -1, c);
        b.mem(back, "gpu", shard[ci], MemAt::kStart);
        // ... then fp32_grad.copy_(grad_buffer): D2H into a pageable fp16 temporary, blocking ...
        const int pg = b.add(make_op::copy(OpKind::kD2H, "d2h", shard[ci], OpSubKind::kGradFp32, false), {back}, -1, c);
        b.mem(pg, "gpu", -shard[ci], MemAt::kEnd);
        b.mem(pg, "pageable", shard[ci], MemAt::kStart);
        // ... cast into the fp32 gradient on the CPU (fp16: read 2 B, write 4 B per parameter).
        grad_on_host = b.add(make_op::host(OpKind::kHostCast, "cpu_optim", rank_params[ci],
                                           shard[ci] + shard[ci] * 4 / L.bytes_per_elem),
                             {pg}, -1, c);
        b.mem(grad_on_host, "pageable", -shard[ci], MemAt::kEnd);
        blocking_host_work.push_back(grad_on_host);  // the hook's thread launches the next backward
      }
      if (complete) {
        grad_offloaded.push_back(grad_on_host);
        offloaded_chunk.push_back(c);
        if (k.cpu_adam_overlap) emit_adam_cpu(c, grad_on_host);
      }
    }
  }
  // Optimizer after backward where the system does it that way (DeepSpeed, Gemini, FSDP).
  if (!k.cpu_adam_overlap) {
    int after_grads = last_bwd;
    if (k.step_host_passes) {
      // DeepSpeed's overflow check reads every host fp16 grad twice (isinf, isnan) with their
      // 1-byte masks before any sub-group is updated.
      std::vector<int> deps = grad_offloaded;
      deps.push_back(last_bwd);
      int64_t params = 0;
      for (int c : offloaded_chunk) params += rank_params[static_cast<size_t>(c)];
      after_grads = b.add(make_op::host(OpKind::kHostPass, "cpu_optim", params, kStepScanBytesPerParam * params,
                                        OpSubKind::kOverflowScan),
                          deps);
    }
    for (size_t i = 0; i < grad_offloaded.size(); ++i) {
      const int c = offloaded_chunk[i];
      const int64_t params = rank_params[static_cast<size_t>(c)];
      int grad_ready = grad_offloaded[i];
      if (k.step_host_passes) {  // the sub-group's fp32 gradient unscaled before its Adam
        grad_ready = b.add(make_op::host(OpKind::kHostPass, "cpu_optim", params, kStepUnscaleBytesPerParam * params,
                                         OpSubKind::kUnscale),
                           {after_grads}, -1, c);  // the scan waited for the grad
      }
      const int a = emit_adam_cpu(c, grad_ready);
      if (!k.step_host_passes) b.op(a).deps.push_back(last_bwd);
      std::sort(b.op(a).deps.begin(), b.op(a).deps.end());
      if (k.step_host_passes) {  // ... and its fp16 parameters copied from the updated master
        b.add(make_op::host(OpKind::kHostPass, "cpu_optim", params, kStepCopyBytesPerParam * params,
                            OpSubKind::kFp16Copy),
              {a}, -1, c);
      }
    }
  }
  // Persistent chunks on the GPU: device Adam after backward, on the compute stream.
  for (const auto& [after, c] : persistent_grad_ready) {
    const size_t ci = static_cast<size_t>(c);
    const int a = b.add(make_op::adam_device("compute", k.offload ? rank_params[ci] : L.chunks[ci].used_elems),
                        {after}, -1, c);
    b.op(a).reads = {gpu_t[ci]};
    // Offloading systems keep a persistent chunk's Adam state sharded (ZeRO): each rank updates its
    // shard, and the updated parameters are gathered for the next forward (traces/chunk_sharding.h).
    if (k.offload && N > 1) collective(OpKind::kAllGather, a, c);
  }
  // ZeRO-Offload: the updated fp16 shards of the GPU-resident params go back up and are gathered.
  if (k.offload && !k.persistent_gpu_adam) {
    for (size_t i = 0; i < offloaded_chunk.size(); ++i) {
      const int c = offloaded_chunk[i];
      const size_t ci = static_cast<size_t>(c);
      if (!persistent[ci]) continue;
      const int up = b.add(make_op::copy(OpKind::kH2D, "h2d", shard[ci], OpSubKind::kUpdatedParams, true),
                           {adam_cpu_ops[i]}, -1, c);
      if (N > 1) collective(OpKind::kAllGather, up, c);
    }
  }
  // Version 2: every chunk says where it lives and where its step runs (what the runtime replays).
  for (int c = 0; c < n_chunks; ++c) plan.chunks[static_cast<size_t>(c)].resident = persistent[static_cast<size_t>(c)];
  for (const Op& op : plan.ops)
    if (op.kind == OpKind::kAdamDevice || op.kind == OpKind::kAdamCpu)
      plan.chunks[static_cast<size_t>(op.chunk)].optimizer = op.kind == OpKind::kAdamDevice ? "device" : "host";
  return out;
}

}  // namespace protwin::sim::offload
