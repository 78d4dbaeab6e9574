#include "runtime/executor/plan_replayer.h"

#include <cstdio>

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include "runtime/profile/aten_op_recorder.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {
RankGroup& ranks_of(const ReplayOptions& o) {
  static RankGroup one_rank;
  return o.ranks ? *o.ranks : one_rank;
}
}  // namespace

PlanReplayer::PlanReplayer(const RuntimePlan& rp, const ReplayOptions& options)
    : PlanReplayer(rp, options, std::make_unique<EmulatedDevice>(options.link_gbps, options.threads.compute)) {
  options_.threads.apply();
}

PlanReplayer::PlanReplayer(const RuntimePlan& rp, const ReplayOptions& options, std::unique_ptr<DeviceOps> device)
    : rp_(rp),
      options_(options),
      device_(std::move(device)),
      chunks_(rp.model, rp.chunks, *device_, ranks_of(options)),
      acts_(rp.model.layers, *device_),
      executor_(rp.plan) {
  for (const traces::TensorSpec& t : rp.plan.tensors) {
    if (t.kind != traces::TensorKind::kBuffer) continue;
    int c = -1;
    char tail = 0;
    if (std::sscanf(t.name.c_str(), "chunk%d.buffe%c", &c, &tail) == 2 && tail == 'r') buffer_chunk_[t.id] = c;
  }
}

void PlanReplayer::bind(int64_t block, bool with_grads, ModelWeights& w, ModelWeights& g) {
  std::vector<at::Tensor> params, grads;
  chunks_.block_views(block, params, grads, with_grads);
  bind_block(rp_.model, block, params, w);
  if (with_grads) bind_block(rp_.model, block, grads, g);
}

void PlanReplayer::run(const traces::Op& op) {
  // A user scope per plan op, so an AtenOpRecorder knows which plan op each ATen call ran in
  // (inactive, and nearly free, without a recorder).
  at::RecordFunction scope(at::RecordScope::USER_SCOPE);
  if (scope.isActive()) scope.before(plan_op_scope(op.id));
  device_->run_op(op, [&] { run_semantics(op); });
}

void PlanReplayer::run_semantics(const traces::Op& op) {
  const ModelSpec& cfg = rp_.model;
  const std::string k = traces::to_string(op.kind);
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
      const int64_t l = blk - 1;
      if (k == "recompute") {
        LayerActs& a = acts_.device(l);
        layer_forward(cfg, w.layers[static_cast<size_t>(l)], a.input, &a);
      } else {
        x_ = layer_forward(cfg, w.layers[static_cast<size_t>(l)], x_, &acts_.device(l));
        if (rp_.layer_modes[static_cast<size_t>(l)] == LayerMode::kCheckpoint) acts_.keep_input_only(l);
      }
    }
    // Buffers whose forward run ends here.
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
      const int64_t l = blk - 1;
      dx_ = layer_backward(cfg, w.layers[static_cast<size_t>(l)], acts_.device(l), dx_,
                           g.layers[static_cast<size_t>(l)]);
      acts_.drop(l);
    }
  } else if (k == "h2d" || k == "d2h") {
    const std::string what = traces::to_string(op.sub_kind);
    if (what == "activation") {
      if (k == "h2d") acts_.swap_in(blk - 1);
      else acts_.swap_out(blk - 1);
    } else if (what == "param_chunk") {
      chunks_.upload(op.chunk);
    } else if (what == "updated_params") {
      chunks_.upload_updated(op.chunk);
    } else if (what == "grad_roundtrip") {
      chunks_.grad_roundtrip(op.chunk);
    } else if (what == "grad_fp32") {
      chunks_.grad_to_pageable(op.chunk);
    } else {  // grad_chunk, partial_grad_chunk
      chunks_.offload_grad(op.chunk, what == "partial_grad_chunk");
    }
  } else if (k == "all_gather") {
    chunks_.gather_params(op.chunk);
  } else if (k == "reduce_scatter" || k == "all_reduce") {
    chunks_.reduce_grad(op.chunk, k == "all_reduce");
  } else if (k == "broadcast") {
    chunks_.broadcast_params(op.chunk);
  } else if (k == "host_cast") {
    chunks_.cast_grad(op.chunk);
  } else if (k == "host_pass") {
    const std::string what = traces::to_string(op.sub_kind);
    if (what == "overflow_scan") chunks_.overflow_scan();
    else if (what == "unscale") chunks_.unscale_grad(op.chunk);
    else chunks_.copy_to_half(op.chunk);
  } else if (k == "adam_cpu") {
    const bool simd = op.sub_kind != traces::OpSubKind::kTorch;
    chunks_.adam_host(op.chunk, options_.adam, adam_step_, simd, options_.threads.optimizer);
  } else if (k == "adam_device") {
    chunks_.adam_device(op.chunk, options_.adam, adam_step_, options_.threads.compute);
  } else {
    PROTWIN_ASSERT(false, traces::describe_op(op), ": op kind not replayable (make_runtime_plan let it through)");
  }
}

StepResult PlanReplayer::step(const at::Tensor& tokens, const at::Tensor& targets, int64_t adam_step) {
  PROTWIN_CHECK(tokens.dim() == 2 && tokens.size(0) == rp_.batch && tokens.size(1) == rp_.seq,
                "runtime step: tokens must be [", rp_.batch, ", ", rp_.seq, "] (the plan's batch and seq)");
  device_->begin_iteration();  // every stream idle: last iteration's work is done
  tokens_ = device_->to_compute(tokens);
  targets_ = device_->to_compute(targets);
  adam_step_ = adam_step;
  chunks_.begin_iteration();
  acts_.clear();
  PoolLedger ledger(rp_.plan.pools);
  StepResult r;
  r.report = executor_.run(*this, ledger);
  device_->finish_iteration(r.report);
  PROTWIN_ASSERT(loss_.defined(), "the plan ran no head forward");
  r.loss = loss_.item<double>();
  loss_ = x_ = dx_ = tokens_ = targets_ = at::Tensor();
  r.plan_peak_device_bytes = ledger.peak("gpu");
  r.peak_host_bytes = ledger.host_peak();
  const MeasuredMemory mem = device_->measured_memory();
  r.peak_device_bytes = mem.measured ? mem.device_allocated_peak : r.plan_peak_device_bytes;
  r.peak_device_reserved_bytes = mem.device_reserved_peak;
  r.peak_pinned_bytes = mem.pinned_peak;
  r.peak_pageable_bytes = mem.pageable_peak;
  nlohmann::json meta = traces::plan_meta_json(rp_.plan);  // with the typed ranks, nodes and dtype
  meta["source"] = "runtime";
  if (r.report.meta.contains("steady_start_ns")) meta["steady_start_ns"] = r.report.meta["steady_start_ns"];  // executor's
  meta["plan"] = rp_.source;
  device_->describe(meta);
  if (mem.measured)
    meta["measured_memory"] = {{"device_allocated_peak_bytes", mem.device_allocated_peak},
                               {"device_reserved_peak_bytes", mem.device_reserved_peak},
                               {"pinned_peak_bytes", mem.pinned_peak},
                               {"pageable_peak_bytes", mem.pageable_peak},
                               {"plan_device_peak_bytes", r.plan_peak_device_bytes}};
  meta["adam_step"] = adam_step;
  r.report.meta = meta;
  return r;
}

}  // namespace protwin::rt
