#include "runtime/memory/chunk_store.h"

#include <ATen/ATen.h>

#include "runtime/optim/device_adam.h"
#include "runtime/optim/host_passes.h"
#include "traces/error.h"

namespace protwin::rt {

ChunkStore::ChunkStore(const ModelSpec& cfg, ChunkLayout layout, DeviceOps& device, RankGroup& ranks)
    : cfg_(cfg),
      specs_(stored_parameters(cfg)),
      layout_(std::move(layout)),
      device_(device),
      ranks_(ranks) {
  PROTWIN_ASSERT(layout_.slots.size() == specs_.size(), "chunk layout has ", layout_.slots.size(),
                 " slots for ", specs_.size(), " parameters");
  const size_t n = layout_.chunk_numel.size();
  if (layout_.device_sharded.empty()) layout_.device_sharded.assign(n, false);
  PROTWIN_ASSERT(layout_.device_resident.size() == n && layout_.device_optimizer.size() == n &&
                     layout_.device_sharded.size() == n,
                 "chunk layout vectors differ in length");
  chunks_.resize(n);
  for (size_t c = 0; c < n; ++c) {
    Chunk& ch = chunks_[c];
    const int64_t e = layout_.chunk_numel[c];
    if (layout_.device_resident[c]) {
      ch.dev_params = device_.device_zeros(e);
      ch.dev_grad = device_.device_zeros(e);
    }
    if (layout_.device_optimizer[c]) {
      const int64_t shard = host_shard(static_cast<int>(c)).count;
      ch.dev_m = device_.device_zeros(shard);
      ch.dev_v = device_.device_zeros(shard);
    } else {
      const int64_t shard = host_shard(static_cast<int>(c)).count;
      ch.host_params = device_.host_zeros(shard);
      ch.host_grad = device_.host_zeros(shard);
      ch.host_m = device_.host_zeros(shard);
      ch.host_v = device_.host_zeros(shard);
    }
  }
  device_.synchronize();
}

bool ChunkStore::host_owned(int c) const { return !layout_.device_optimizer[static_cast<size_t>(c)]; }

bool ChunkStore::device_sharded(int c) const { return layout_.device_sharded[static_cast<size_t>(c)]; }

bool ChunkStore::sharded_state(int c, StateKind kind) const {
  // A device-sharded chunk keeps whole params beside its shard of m and v.
  return ranks_.size() > 1 && (host_owned(c) || (device_sharded(c) && kind != StateKind::kParams));
}

Shard ChunkStore::host_shard(int c) const {
  const int64_t n = layout_.chunk_numel[static_cast<size_t>(c)];
  return host_owned(c) || device_sharded(c) ? ranks_.shard(n) : Shard{0, n};
}

at::Tensor& ChunkStore::master(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  return host_owned(c) ? ch.host_params : ch.dev_params;
}

const at::Tensor& ChunkStore::state(int c, StateKind kind) const {
  const Chunk& ch = chunks_[static_cast<size_t>(c)];
  const bool host = host_owned(c);
  switch (kind) {
    case StateKind::kParams: return host ? ch.host_params : ch.dev_params;
    case StateKind::kExpAvg: return host ? ch.host_m : ch.dev_m;
    case StateKind::kExpAvgSq: return host ? ch.host_v : ch.dev_v;
  }
  PROTWIN_ASSERT(false, "bad state kind");
}

at::Tensor ChunkStore::export_flat(StateKind kind) const {
  device_.synchronize();  // host-side reads see every queued copy and kernel
  std::vector<at::Tensor> whole;  // each chunk's state, every rank's shard gathered
  for (int c = 0; c < chunks(); ++c) {
    const at::Tensor mine = state(c, kind).cpu();
    const int64_t n = layout_.chunk_numel[static_cast<size_t>(c)];
    if (!sharded_state(c, kind)) {
      whole.push_back(mine);
      continue;
    }
    at::Tensor all = at::zeros({n}, at::kFloat);
    const Shard s = host_shard(c);
    all.narrow(0, s.begin, s.count).copy_(mine);
    ranks_.all_gather(all);
    whole.push_back(all);
  }
  std::vector<at::Tensor> parts;
  for (const ParamSlot& s : layout_.slots) parts.push_back(whole[static_cast<size_t>(s.chunk)].narrow(0, s.offset, s.numel));
  return at::cat(parts);
}

void ChunkStore::import_flat(StateKind kind, const at::Tensor& flat) {
  int64_t total = 0;
  for (const ParamSlot& s : layout_.slots) total += s.numel;
  PROTWIN_CHECK(flat.dim() == 1 && flat.numel() == total && flat.scalar_type() == at::kFloat,
                "runtime chunk store: expected ", total, " fp32 values, got ", flat.numel());
  device_.synchronize();
  std::vector<at::Tensor> whole;
  for (int64_t n : layout_.chunk_numel) whole.push_back(at::zeros({n}, at::kFloat));
  int64_t off = 0;
  for (const ParamSlot& s : layout_.slots) {
    whole[static_cast<size_t>(s.chunk)].narrow(0, s.offset, s.numel).copy_(flat.narrow(0, off, s.numel));
    off += s.numel;
  }
  for (int c = 0; c < chunks(); ++c) {
    at::Tensor dst = state(c, kind);  // handle to the chunk's storage
    const int64_t n = layout_.chunk_numel[static_cast<size_t>(c)];
    const Shard s = sharded_state(c, kind) ? host_shard(c) : Shard{0, n};
    dst.copy_(whole[static_cast<size_t>(c)].narrow(0, s.begin, s.count));
    // A ZeRO-Offload chunk keeps a device copy of the (whole) master.
    if (kind == StateKind::kParams && layout_.device_resident[static_cast<size_t>(c)] && host_owned(c))
      chunks_[static_cast<size_t>(c)].dev_params.copy_(whole[static_cast<size_t>(c)]);
  }
  device_.synchronize();
}

void ChunkStore::load_params(const std::vector<at::Tensor>& params) {
  PROTWIN_CHECK(params.size() == specs_.size(), "runtime chunk store: got ", params.size(),
                " parameters, the model has ", specs_.size());
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : params) flat.push_back(p.reshape({-1}).to(at::kFloat).cpu());
  import_flat(StateKind::kParams, at::cat(flat));
  for (Chunk& ch : chunks_)
    for (at::Tensor* t : {&ch.host_m, &ch.host_v, &ch.dev_m, &ch.dev_v})
      if (t->defined()) t->zero_();
  device_.synchronize();
}

at::Tensor ChunkStore::device_params_locked(int c) const {
  const Chunk& ch = chunks_[static_cast<size_t>(c)];
  if (layout_.device_resident[static_cast<size_t>(c)]) return ch.dev_params;
  return ch.buffers.empty() ? at::Tensor() : ch.buffers.back();
}

void ChunkStore::upload(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(!layout_.device_resident[static_cast<size_t>(c)], "upload of persistent chunk ", c);
  at::Tensor buf = device_.device_empty({layout_.chunk_numel[static_cast<size_t>(c)]}, at::kFloat);
  const Shard s = host_shard(c);
  device_.copy(buf.narrow(0, s.begin, s.count), ch.host_params, Link::kH2D);
  device_.used_by_compute(buf);  // read by forward/backward
  std::lock_guard<std::mutex> lock(mu_);
  ch.buffers.push_back(buf);
  if (ranks_.size() > 1) ch.ungathered.push_back(buf);
}

void ChunkStore::gather_params(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  at::Tensor target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (layout_.device_resident[static_cast<size_t>(c)]) {
      target = ch.dev_params;
    } else {
      PROTWIN_ASSERT(!ch.ungathered.empty(), "all_gather of chunk ", c, " that was not uploaded");
      target = ch.ungathered.front();
      ch.ungathered.pop_front();
    }
  }
  ranks_.all_gather(target);
}

void ChunkStore::reduce_grad(int c, bool everywhere) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  at::Tensor grad;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grad = ch.dev_grad;
  }
  PROTWIN_ASSERT(grad.defined(), "reduction of chunk ", c, " that has no gradient");
  if (ch.host_partial_valid) {  // the tied gradient's earlier pieces (offload_grad)
    grad.add_(ch.host_partial);
    ch.host_partial_valid = false;
  }
  if (everywhere || (!host_owned(c) && !device_sharded(c))) ranks_.all_reduce_mean(grad);
  else ranks_.reduce_scatter_mean(grad);
}

void ChunkStore::broadcast_params(int c) {
  at::Tensor target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    target = device_params_locked(c);
  }
  PROTWIN_ASSERT(target.defined(), "broadcast of chunk ", c, " that is not on the device");
  ranks_.broadcast(target, 0);
}

void ChunkStore::upload_updated(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(ch.dev_params.defined() && ch.host_params.defined(), "updated_params of chunk ", c,
                 " without a device and a host copy");
  const Shard s = host_shard(c);
  device_.copy(ch.dev_params.narrow(0, s.begin, s.count), ch.host_params, Link::kH2D);
}

void ChunkStore::offload_grad(int c, bool partial) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(host_owned(c), "gradient offload of chunk ", c, " whose optimizer is on the device");
  at::Tensor grad;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grad = ch.dev_grad;
  }
  PROTWIN_ASSERT(grad.defined(), "gradient offload of chunk ", c, " that has no gradient");
  device_.used_here(grad);  // allocated for compute, read by this copy
  const bool unreduced = partial && ranks_.size() > 1;  // reduced later with the rest of the gradient
  const Shard s = unreduced ? Shard{0, grad.numel()} : host_shard(c);
  at::Tensor& host = unreduced ? ch.host_partial : ch.host_grad;
  bool& valid = unreduced ? ch.host_partial_valid : ch.host_grad_valid;
  if (!host.defined()) host = device_.host_zeros(grad.numel());
  if (!valid) {
    device_.copy(host, grad.narrow(0, s.begin, s.count), Link::kD2H);
    valid = true;
  } else {
    // A tied gradient arriving in pieces: summed on the host once its bytes are there.
    at::Tensor staging = device_.host_empty({s.count}, at::kFloat);
    device_.copy(staging, grad.narrow(0, s.begin, s.count), Link::kD2H);
    device_.wait_copies();
    host.add_(staging);
  }
  if (layout_.device_resident[static_cast<size_t>(c)]) {
    grad.zero_();  // after the copy (same stream)
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    PROTWIN_ASSERT(!ch.buffers.empty(), "gradient offload of chunk ", c, " that is in no buffer");
    device_.used_here(ch.buffers.front());
    ch.buffers.pop_front();
    ch.dev_grad = at::Tensor();
  }
}

void ChunkStore::release_buffer(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(!layout_.device_resident[static_cast<size_t>(c)], "release of persistent chunk ", c);
  std::lock_guard<std::mutex> lock(mu_);
  PROTWIN_ASSERT(!ch.buffers.empty(), "release of chunk ", c, " that is in no buffer");
  ch.buffers.pop_front();  // freed after the compute stream's queued work (used_by_compute at upload)
}

bool ChunkStore::on_device(int c) const {
  std::lock_guard<std::mutex> lock(mu_);
  return device_params_locked(c).defined();
}

void ChunkStore::block_views(int64_t block, std::vector<at::Tensor>& params,
                             std::vector<at::Tensor>& grads, bool with_grads) {
  params.resize(specs_.size());
  grads.resize(specs_.size());
  std::lock_guard<std::mutex> lock(mu_);
  auto bind = [&](size_t i) {
    const ParamSlot& s = layout_.slots[i];
    Chunk& ch = chunks_[static_cast<size_t>(s.chunk)];
    const at::Tensor dev = device_params_locked(s.chunk);
    PROTWIN_ASSERT(dev.defined(), "block ", block, " runs while chunk ", s.chunk, " (", specs_[i].name,
                   ") is not on the device");
    params[i] = dev.narrow(0, s.offset, s.numel).view(specs_[i].shape);
    if (with_grads) {
      if (!ch.dev_grad.defined()) ch.dev_grad = device_.device_zeros(dev.numel());
      grads[i] = ch.dev_grad.narrow(0, s.offset, s.numel).view(specs_[i].shape);
    }
  };
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].block == block) bind(i);
  if (cfg_.tied_embeddings && block == head_block(cfg_)) bind(0);  // LM head = token embedding
}

void ChunkStore::grad_roundtrip(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(ch.host_grad_valid, "grad_roundtrip of chunk ", c, " before its gradient was offloaded");
  at::Tensor scratch = device_.device_empty({ch.host_grad.numel()}, at::kFloat);
  device_.copy(scratch, ch.host_grad, Link::kH2D);
  std::lock_guard<std::mutex> lock(mu_);
  ch.dev_grad_copy = scratch;
}

void ChunkStore::grad_to_pageable(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  at::Tensor scratch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    scratch = ch.dev_grad_copy;
    ch.dev_grad_copy = at::Tensor();
  }
  PROTWIN_ASSERT(scratch.defined(), "grad_fp32 of chunk ", c, " without its grad_roundtrip");
  device_.used_here(scratch);
  ch.pageable_grad = device_.pageable_empty({scratch.numel()}, at::kFloat);
  device_.copy(ch.pageable_grad, scratch, Link::kD2H);
  device_.wait_copies();  // ATen's copy_ into pageable memory returns when the bytes are there
}

void ChunkStore::cast_grad(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(ch.pageable_grad.defined(), "host_cast of chunk ", c, " without its grad_fp32 copy");
  if (!ch.host_grad_fp32.defined()) ch.host_grad_fp32 = device_.pageable_empty({ch.pageable_grad.numel()}, at::kFloat);
  ch.host_grad_fp32.copy_(ch.pageable_grad);  // the runtime trains in fp32: the cast is a copy
  ch.pageable_grad = at::Tensor();
  ch.host_grad_fp32_valid = true;
}

void ChunkStore::overflow_scan() {
  for (size_t c = 0; c < chunks_.size(); ++c) {
    Chunk& ch = chunks_[c];
    if (!host_owned(static_cast<int>(c)) || !ch.host_grad_valid) continue;
    PROTWIN_CHECK(!has_non_finite(adam_grad(ch)), "chunk ", c,
                  ": non-finite gradient (the runtime has no loss scaler to skip the step)");
  }
}

void ChunkStore::unscale_grad(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(host_owned(c) && ch.host_grad_valid, "unscale of chunk ", c, " before its gradient was offloaded");
  unscale(adam_grad(ch), 1.0);  // 1 / loss scale
}

void ChunkStore::copy_to_half(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  const at::Tensor& m = master(c);
  if (!ch.host_half.defined()) ch.host_half = device_.pageable_empty({m.numel()}, at::kHalf);
  rt::copy_to_half(ch.host_half, m);
}

void ChunkStore::adam_host(int c, const AdamConfig& cfg, int64_t step, bool simd, int threads) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(host_owned(c) && ch.host_grad_valid, "CPU Adam on chunk ", c,
                 " before its gradient was offloaded");
  // The host gradient is complete: the op's deps include the offload's end (or the cast's).
  at::Tensor& grad = adam_grad(ch);
  if (simd) {
    adam_step_cpu(cfg, step,
                  AdamBuffers{ch.host_params.data_ptr<float>(), grad.data_ptr<float>(),
                              ch.host_m.data_ptr<float>(), ch.host_v.data_ptr<float>(),
                              ch.host_params.numel()},
                  threads);
  } else {
    adam_step_device(cfg, step, ch.host_params, grad, ch.host_m, ch.host_v);
  }
}

void ChunkStore::adam_device(int c, const AdamConfig& cfg, int64_t step, int threads) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(layout_.device_optimizer[static_cast<size_t>(c)], "device Adam on chunk ", c,
                 " whose optimizer state is on the host");
  if (device_sharded(c)) {  // this rank's shard; the plan's all_gather then completes the params
    const Shard s = host_shard(c);
    at::Tensor params = ch.dev_params.narrow(0, s.begin, s.count), grad = ch.dev_grad.narrow(0, s.begin, s.count);
    device_.adam(cfg, step, params, grad, ch.dev_m, ch.dev_v, threads);
  } else {
    device_.adam(cfg, step, ch.dev_params, ch.dev_grad, ch.dev_m, ch.dev_v, threads);
  }
  ch.dev_grad.zero_();
}

void ChunkStore::begin_iteration() {
  for (Chunk& ch : chunks_) ch.host_grad_valid = ch.host_grad_fp32_valid = ch.host_partial_valid = false;
}

}  // namespace protwin::rt
