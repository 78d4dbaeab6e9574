// The chunk store on a CUDA GPU: the same layout and semantics as runtime/memory/chunk_store.h
// (one flat fp32 tensor per chunk and role, weights and gradients are views), with device tensors
// from the caching allocator and host shards (master params, grad, m, v) in pinned memory.
// Copies are tensor.copy_(src, non_blocking) on the calling op's stream (h2d or d2h, made current
// by the replayer); a device tensor used on a stream other than the one it was allocated on is
// record_stream()ed there so the allocator does not reuse it early.
// CUDA build only (PROTWIN_WITH_CUDA). Runtime header: includes ATen and c10/cuda.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>

#include "runtime/cuda/cuda_memory.h"
#include "runtime/memory/chunk_store.h"
#include "runtime/model/model_config.h"
#include "runtime/optim/cpu_adam.h"

namespace protwin::rt {

class CudaChunkStore {
 public:
  // `memory` must outlive the store; `compute` is the stream forward/backward run on.
  CudaChunkStore(const ModelConfig& cfg, ChunkLayout layout, const CudaMemory& memory, c10::cuda::CUDAStream compute);

  // Flat CPU fp32 states in param_specs order; these synchronize the device.
  at::Tensor export_flat(StateKind kind) const;
  void import_flat(StateKind kind, const at::Tensor& flat);
  void load_params(const std::vector<at::Tensor>& params);

  // Device side, each on the current stream of the calling op (see chunk_store.h for the plan
  // semantics of each).
  void upload(int c);
  void upload_updated(int c);
  void offload_grad(int c);
  void release_buffer(int c);
  void block_views(int64_t block, std::vector<at::Tensor>& params, std::vector<at::Tensor>& grads, bool with_grads);

  void adam_host(int c, const AdamConfig& cfg, int64_t step, bool simd, int threads);
  void adam_device(int c, const AdamConfig& cfg, int64_t step);
  void begin_iteration();

 private:
  struct Chunk {
    at::Tensor host_params, host_grad, host_m, host_v;  // pinned
    at::Tensor dev_params, dev_grad, dev_m, dev_v;
    std::deque<at::Tensor> buffers;
    bool host_grad_valid = false;
  };
  bool host_owned(int c) const { return !layout_.device_optimizer[static_cast<size_t>(c)]; }
  const at::Tensor& state(int c, StateKind kind) const;
  at::Tensor device_params_locked(int c) const;

  ModelConfig cfg_;
  std::vector<ParamSpec> specs_;
  ChunkLayout layout_;
  const CudaMemory& memory_;
  c10::cuda::CUDAStream compute_;
  std::vector<Chunk> chunks_;
  mutable std::mutex mu_;
};

}  // namespace protwin::rt
