// The CUDA device's memory: device tensors come from LibTorch's CUDA caching allocator, capped at
// the plan's "gpu" pool capacity (setMemoryFraction makes the allocator itself refuse more), with
// the allocator's own byte counters as the measured peak; host-side states (chunk shards, swapped
// activations, gradient staging) are pinned, so copies to and from them are truly asynchronous.
// CUDA build only (PROTWIN_WITH_CUDA). Runtime header: includes ATen and c10/cuda.
#pragma once

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

namespace protwin::rt {

class CudaMemory {
 public:
  // `capacity` bytes of the plan's gpu pool; `where` names it in errors
  // ("plan.json:/pools/gpu"). Refuses a capacity above the GPU's memory.
  CudaMemory(int64_t capacity, const std::string& where);

  // Device fp32 tensors on the current CUDA stream (the caching allocator's stream tag).
  at::Tensor device_empty(at::IntArrayRef sizes) const;
  at::Tensor device_zeros(at::IntArrayRef sizes) const;
  // Pinned host tensor (CachingHostAllocator: a block freed while an async copy still reads it is
  // reused only after that copy's event).
  at::Tensor pinned_empty(at::IntArrayRef sizes, at::ScalarType dtype = at::kFloat) const;
  at::Tensor pinned_zeros(at::IntArrayRef sizes) const;

  // The allocator's counters for this device (bytes handed out to tensors, not cached blocks).
  void reset_peak() const;
  int64_t allocated_bytes() const;
  int64_t peak_allocated_bytes() const;

  int64_t capacity() const { return capacity_; }
  int device_index() const { return device_; }
  at::TensorOptions device_options() const;

 private:
  int64_t capacity_;
  int device_;
};

}  // namespace protwin::rt
