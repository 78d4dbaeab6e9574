#include "runtime/cuda/cuda_replayer.h"

#include <cstdio>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>

#include "traces/error.h"

namespace protwin::rt {

CudaReplayer::CudaReplayer(const RuntimePlan& rp, const ReplayOptions& options)
    : rp_(rp),
      options_(options),
      memory_(rp.gpu_capacity(), rp.source + ":/pools/gpu"),
      streams_(rp.plan),
      chunks_(rp.model, rp.chunks, memory_, streams_.stream("compute")),
      executor_(rp.plan),
      acts_(static_cast<size_t>(rp.model.layers)),
      host_acts_(static_cast<size_t>(rp.model.layers)) {
  // Compute threads are the GPU's; the CPU Adam threads still come from the split.
  for (const traces::TensorSpec& t : rp.plan.tensors) {
    if (t.kind != traces::TensorKind::kBuffer) continue;
    int c = -1;
    char tail = 0;
    if (std::sscanf(t.name.c_str(), "chunk%d.buffe%c", &c, &tail) == 2 && tail == 'r') buffer_chunk_[t.id] = c;
  }
}

void CudaReplayer::bind(int64_t block, bool with_grads, ModelWeights& w, ModelWeights& g) {
  std::vector<at::Tensor> params, grads;
  chunks_.block_views(block, params, grads, with_grads);
  bind_block(rp_.model, block, params, w);
  if (with_grads) bind_block(rp_.model, block, grads, g);
}

void CudaReplayer::swap_out(int64_t layer) {
  LayerActs& d = acts_.at(static_cast<size_t>(layer));
  PROTWIN_ASSERT(d.act.defined(), "swap-out of layer ", layer, " before its forward");
  const c10::Stream d2h = c10::cuda::getCurrentCUDAStream().unwrap();
  LayerActs h = d;
  for (at::Tensor* t : h.tensors()) {
    const at::Tensor src = t->is_contiguous() ? *t : t->contiguous();  // packed on d2h
    src.record_stream(d2h);
    at::Tensor dst = memory_.pinned_empty(src.sizes(), src.scalar_type());
    dst.copy_(src, /*non_blocking=*/true);
    *t = dst;
  }
  for (at::Tensor* t : d.tensors()) t->record_stream(d2h);  // freed only after the copies
  host_acts_[static_cast<size_t>(layer)] = std::move(h);
  d = LayerActs{};
}

void CudaReplayer::swap_in(int64_t layer) {
  LayerActs& h = host_acts_.at(static_cast<size_t>(layer));
  PROTWIN_ASSERT(h.act.defined(), "swap-in of layer ", layer, " that was not swapped out");
  const c10::Stream compute = streams_.stream("compute").unwrap();
  LayerActs d = h;
  for (at::Tensor* t : d.tensors()) {
    at::Tensor dst = at::empty(t->sizes(), memory_.device_options().dtype(t->scalar_type()));  // on h2d
    dst.copy_(*t, /*non_blocking=*/true);
    dst.record_stream(compute);  // read by backward
    *t = dst;
  }
  acts_[static_cast<size_t>(layer)] = std::move(d);
  h = LayerActs{};  // pinned blocks are reused only after the copies' events
}

void CudaReplayer::run(const traces::Op& op) {
  const std::optional<c10::cuda::CUDAStream> s = streams_.stream_of(op);
  if (!s) {  // host op: deps synchronized, then run here
    streams_.before(op);
    run_on_stream(op);
    return;
  }
  c10::cuda::CUDAStreamGuard guard(*s);  // ATen kernels, copies and allocations go to the op's stream
  streams_.before(op);
  run_on_stream(op);
  streams_.after(op);
}

void CudaReplayer::run_on_stream(const traces::Op& op) {
  const ModelConfig& cfg = rp_.model;
  const std::string& k = op.kind;
  const int64_t blk = op.block;
  const int64_t head = head_block(cfg);
  if (k == "forward" || k == "recompute") {
    ModelWeights w, g;
    bind(blk, false, w, g);
    if (blk == 0) {
      x_ = embedding_forward(cfg, w.embedding, tokens_, &emb_acts_);
    } else if (blk == head) {
      loss_ = head_forward(cfg, w.head, x_, targets_, &head_acts_);
      x_ = at::Tensor();
    } else {
      const auto l = static_cast<size_t>(blk - 1);
      if (k == "recompute") {
        LayerActs& a = acts_[l];
        layer_forward(cfg, w.layers[l], a.input, &a);
      } else {
        x_ = layer_forward(cfg, w.layers[l], x_, &acts_[l]);
        if (rp_.layer_modes[l] == LayerMode::kCheckpoint) {
          at::Tensor input = acts_[l].input;
          acts_[l] = LayerActs{};
          acts_[l].input = input;
        }
      }
    }
    for (const traces::MemEffect& m : op.mem) {
      auto it = buffer_chunk_.find(m.tensor);
      if (m.pool == "gpu" && m.delta_bytes < 0 && it != buffer_chunk_.end()) chunks_.release_buffer(it->second);
    }
  } else if (k == "backward") {
    ModelWeights w, g;
    bind(blk, true, w, g);
    if (blk == head) {
      dx_ = head_backward(cfg, w.head, head_acts_, g.head);
      head_acts_ = HeadActs{};
    } else if (blk == 0) {
      embedding_backward(cfg, emb_acts_, dx_, g.embedding);
      emb_acts_ = EmbeddingActs{};
      dx_ = at::Tensor();
    } else {
      const auto l = static_cast<size_t>(blk - 1);
      dx_ = layer_backward(cfg, w.layers[l], acts_[l], dx_, g.layers[l]);
      acts_[l] = LayerActs{};
    }
  } else if (k == "h2d" || k == "d2h") {
    const std::string what = op.attrs["what"].get<std::string>();
    if (what == "activation") {
      if (k == "h2d") swap_in(blk - 1);
      else swap_out(blk - 1);
    } else if (what == "param_chunk") {
      chunks_.upload(op.chunk);
    } else if (what == "updated_params") {
      chunks_.upload_updated(op.chunk);
    } else {  // grad_chunk, partial_grad_chunk
      chunks_.offload_grad(op.chunk);
    }
  } else if (k == "adam_cpu") {
    const bool simd = !(op.attrs.is_object() && op.attrs.value("impl", std::string("simd")) == "torch");
    chunks_.adam_host(op.chunk, options_.adam, adam_step_, simd, options_.threads.optimizer);
  } else if (k == "adam_device") {
    chunks_.adam_device(op.chunk, options_.adam, adam_step_);
  } else {
    PROTWIN_ASSERT(false, traces::describe_op(op), ": op kind not replayable (make_runtime_plan let it through)");
  }
}

StepResult CudaReplayer::step(const at::Tensor& tokens, const at::Tensor& targets, int64_t adam_step) {
  PROTWIN_CHECK(tokens.dim() == 2 && tokens.size(0) == rp_.batch && tokens.size(1) == rp_.seq,
                "runtime step: tokens must be [", rp_.batch, ", ", rp_.seq, "] (the plan's batch and seq)");
  streams_.begin_iteration();  // every stream idle: last iteration's work is done
  {
    c10::cuda::CUDAStreamGuard guard(streams_.stream("compute"));
    tokens_ = tokens.to(memory_.device_options().dtype(tokens.scalar_type()));
    targets_ = targets.to(memory_.device_options().dtype(targets.scalar_type()));
  }
  adam_step_ = adam_step;
  chunks_.begin_iteration();
  for (LayerActs& a : acts_) a = LayerActs{};
  for (LayerActs& a : host_acts_) a = LayerActs{};
  memory_.reset_peak();
  PoolLedger ledger(rp_.plan.pools);
  StepResult r;
  r.report = executor_.run(*this, ledger);
  streams_.finish_iteration(r.report);
  PROTWIN_ASSERT(loss_.defined(), "the plan ran no head forward");
  r.loss = loss_.item<double>();
  loss_ = x_ = dx_ = tokens_ = targets_ = at::Tensor();
  r.peak_device_bytes = ledger.peak("gpu");
  r.peak_host_bytes = ledger.host_peak();
  nlohmann::json meta = rp_.plan.meta;
  meta["source"] = "runtime";
  meta["plan"] = rp_.source;
  meta["device"] = "cuda";
  meta["cuda_allocated_peak_bytes"] = memory_.peak_allocated_bytes();
  meta["adam_step"] = adam_step;
  r.report.meta = meta;
  return r;
}

}  // namespace protwin::rt
