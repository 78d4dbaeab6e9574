#include "runtime/cuda/cuda_chunk_store.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include "runtime/optim/device_adam.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {
// Host-side reads and writes of the states (checkpoints) see every queued copy and kernel.
void sync_device() { c10::cuda::device_synchronize(); }
}  // namespace

CudaChunkStore::CudaChunkStore(const ModelConfig& cfg, ChunkLayout layout, const CudaMemory& memory,
                               c10::cuda::CUDAStream compute)
    : cfg_(cfg), specs_(param_specs(cfg)), layout_(std::move(layout)), memory_(memory), compute_(compute) {
  PROTWIN_ASSERT(layout_.slots.size() == specs_.size(), "chunk layout has ", layout_.slots.size(),
                 " slots for ", specs_.size(), " parameters");
  const size_t n = layout_.chunk_numel.size();
  chunks_.resize(n);
  // Persistent states are allocated on the compute stream, which uses them.
  c10::cuda::CUDAStreamGuard guard(compute_);
  for (size_t c = 0; c < n; ++c) {
    Chunk& ch = chunks_[c];
    const int64_t e = layout_.chunk_numel[c];
    if (layout_.device_resident[c]) {
      ch.dev_params = memory_.device_zeros({e});
      ch.dev_grad = memory_.device_zeros({e});
    }
    if (layout_.device_optimizer[c]) {
      ch.dev_m = memory_.device_zeros({e});
      ch.dev_v = memory_.device_zeros({e});
    } else {
      ch.host_params = memory_.pinned_zeros({e});
      ch.host_grad = memory_.pinned_zeros({e});
      ch.host_m = memory_.pinned_zeros({e});
      ch.host_v = memory_.pinned_zeros({e});
    }
  }
  sync_device();
}

const at::Tensor& CudaChunkStore::state(int c, StateKind kind) const {
  const Chunk& ch = chunks_[static_cast<size_t>(c)];
  const bool host = host_owned(c);
  switch (kind) {
    case StateKind::kParams: return host ? ch.host_params : ch.dev_params;
    case StateKind::kExpAvg: return host ? ch.host_m : ch.dev_m;
    case StateKind::kExpAvgSq: return host ? ch.host_v : ch.dev_v;
  }
  PROTWIN_ASSERT(false, "bad state kind");
}

at::Tensor CudaChunkStore::export_flat(StateKind kind) const {
  sync_device();
  std::vector<at::Tensor> parts;
  for (const ParamSlot& s : layout_.slots) parts.push_back(state(s.chunk, kind).narrow(0, s.offset, s.numel).cpu());
  return at::cat(parts);
}

void CudaChunkStore::import_flat(StateKind kind, const at::Tensor& flat) {
  int64_t total = 0;
  for (const ParamSlot& s : layout_.slots) total += s.numel;
  PROTWIN_CHECK(flat.dim() == 1 && flat.numel() == total && flat.scalar_type() == at::kFloat,
                "runtime chunk store: expected ", total, " fp32 values, got ", flat.numel());
  sync_device();
  int64_t off = 0;
  for (const ParamSlot& s : layout_.slots) {
    at::Tensor dst = state(s.chunk, kind);
    dst.narrow(0, s.offset, s.numel).copy_(flat.narrow(0, off, s.numel));
    off += s.numel;
  }
  if (kind == StateKind::kParams) {
    for (size_t c = 0; c < chunks_.size(); ++c)
      if (layout_.device_resident[c] && host_owned(static_cast<int>(c)))
        chunks_[c].dev_params.copy_(chunks_[c].host_params);
  }
  sync_device();
}

void CudaChunkStore::load_params(const std::vector<at::Tensor>& params) {
  PROTWIN_CHECK(params.size() == specs_.size(), "runtime chunk store: got ", params.size(),
                " parameters, the model has ", specs_.size());
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : params) flat.push_back(p.reshape({-1}).to(at::kFloat).cpu());
  import_flat(StateKind::kParams, at::cat(flat));
  for (Chunk& ch : chunks_)
    for (at::Tensor* t : {&ch.host_m, &ch.host_v, &ch.dev_m, &ch.dev_v})
      if (t->defined()) t->zero_();
  sync_device();
}

at::Tensor CudaChunkStore::device_params_locked(int c) const {
  const Chunk& ch = chunks_[static_cast<size_t>(c)];
  if (layout_.device_resident[static_cast<size_t>(c)]) return ch.dev_params;
  return ch.buffers.empty() ? at::Tensor() : ch.buffers.back();
}

void CudaChunkStore::upload(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(!layout_.device_resident[static_cast<size_t>(c)], "upload of persistent chunk ", c);
  at::Tensor buf = memory_.device_empty({layout_.chunk_numel[static_cast<size_t>(c)]});  // on the h2d stream
  buf.copy_(ch.host_params, /*non_blocking=*/true);
  buf.record_stream(compute_.unwrap());  // read by forward/backward on the compute stream
  std::lock_guard<std::mutex> lock(mu_);
  ch.buffers.push_back(buf);
}

void CudaChunkStore::upload_updated(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(ch.dev_params.defined() && ch.host_params.defined(), "updated_params of chunk ", c,
                 " without a device and a host copy");
  ch.dev_params.copy_(ch.host_params, /*non_blocking=*/true);
}

void CudaChunkStore::offload_grad(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(host_owned(c), "gradient offload of chunk ", c, " whose optimizer is on the device");
  const c10::cuda::CUDAStream d2h = c10::cuda::getCurrentCUDAStream();
  at::Tensor grad;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grad = ch.dev_grad;
  }
  PROTWIN_ASSERT(grad.defined(), "gradient offload of chunk ", c, " that has no gradient");
  grad.record_stream(d2h.unwrap());  // allocated on compute, read here
  if (!ch.host_grad_valid) {
    ch.host_grad.copy_(grad, /*non_blocking=*/true);
    ch.host_grad_valid = true;
  } else {
    // A tied gradient arriving in pieces: summed on the host once its bytes are there.
    at::Tensor staging = memory_.pinned_empty({ch.host_grad.numel()});
    staging.copy_(grad, /*non_blocking=*/true);
    d2h.synchronize();
    ch.host_grad.add_(staging);
  }
  if (layout_.device_resident[static_cast<size_t>(c)]) {
    grad.zero_();  // on d2h, after the copy
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    PROTWIN_ASSERT(!ch.buffers.empty(), "gradient offload of chunk ", c, " that is in no buffer");
    ch.buffers.front().record_stream(d2h.unwrap());
    ch.buffers.pop_front();
    ch.dev_grad = at::Tensor();
  }
}

void CudaChunkStore::release_buffer(int c) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(!layout_.device_resident[static_cast<size_t>(c)], "release of persistent chunk ", c);
  std::lock_guard<std::mutex> lock(mu_);
  PROTWIN_ASSERT(!ch.buffers.empty(), "release of chunk ", c, " that is in no buffer");
  ch.buffers.pop_front();  // freed after the compute stream's queued work (record_stream at upload)
}

void CudaChunkStore::block_views(int64_t block, std::vector<at::Tensor>& params, std::vector<at::Tensor>& grads,
                                 bool with_grads) {
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
      if (!ch.dev_grad.defined()) ch.dev_grad = memory_.device_zeros({dev.numel()});  // on compute
      grads[i] = ch.dev_grad.narrow(0, s.offset, s.numel).view(specs_[i].shape);
    }
  };
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].block == block) bind(i);
  if (cfg_.tied_embeddings() && block == head_block(cfg_)) bind(0);
}

void CudaChunkStore::adam_host(int c, const AdamConfig& cfg, int64_t step, bool simd, int threads) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(host_owned(c) && ch.host_grad_valid, "CPU Adam on chunk ", c,
                 " before its gradient was offloaded");
  // The host gradient is complete: CudaStreams synchronized on the offload's end event.
  if (simd) {
    adam_step_cpu(cfg, step,
                  AdamBuffers{ch.host_params.data_ptr<float>(), ch.host_grad.data_ptr<float>(),
                              ch.host_m.data_ptr<float>(), ch.host_v.data_ptr<float>(), ch.host_params.numel()},
                  threads);
  } else {
    adam_step_device(cfg, step, ch.host_params, ch.host_grad, ch.host_m, ch.host_v);
  }
}

void CudaChunkStore::adam_device(int c, const AdamConfig& cfg, int64_t step) {
  Chunk& ch = chunks_[static_cast<size_t>(c)];
  PROTWIN_ASSERT(layout_.device_optimizer[static_cast<size_t>(c)], "device Adam on chunk ", c,
                 " whose optimizer state is on the host");
  adam_step_device(cfg, step, ch.dev_params, ch.dev_grad, ch.dev_m, ch.dev_v);  // CUDA kernels
  ch.dev_grad.zero_();
}

void CudaChunkStore::begin_iteration() {
  for (Chunk& ch : chunks_) ch.host_grad_valid = false;
}

}  // namespace protwin::rt
