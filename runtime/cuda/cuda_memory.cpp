#include "runtime/cuda/cuda_memory.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include "traces/error.h"

namespace protwin::rt {

namespace {
constexpr size_t kAggregate = static_cast<size_t>(c10::cuda::CUDACachingAllocator::StatType::AGGREGATE);
}  // namespace

CudaMemory::CudaMemory(int64_t capacity, const std::string& where)
    : capacity_(capacity), device_(c10::cuda::current_device()) {
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<int64_t>(device_));
  const auto total = static_cast<int64_t>(prop->totalGlobalMem);
  PROTWIN_CHECK(capacity_ > 0 && capacity_ <= total, where, ": capacity ", capacity_, " bytes does not fit CUDA device ",
                device_, " (", prop->name, ", ", total, " bytes)");
  // The plan's capacity is a hard cap for the caching allocator (its reserved blocks included):
  // a schedule that needs more fails with the allocator's out-of-memory error.
  c10::cuda::CUDACachingAllocator::setMemoryFraction(static_cast<double>(capacity_) / static_cast<double>(total),
                                                     device_);
}

at::TensorOptions CudaMemory::device_options() const {
  return at::TensorOptions().dtype(at::kFloat).device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_)));
}

at::Tensor CudaMemory::device_empty(at::IntArrayRef sizes) const { return at::empty(sizes, device_options()); }
at::Tensor CudaMemory::device_zeros(at::IntArrayRef sizes) const { return at::zeros(sizes, device_options()); }

at::Tensor CudaMemory::pinned_empty(at::IntArrayRef sizes, at::ScalarType dtype) const {
  return at::empty(sizes, at::TensorOptions().dtype(dtype).pinned_memory(true));
}

at::Tensor CudaMemory::pinned_zeros(at::IntArrayRef sizes) const { return pinned_empty(sizes).zero_(); }

void CudaMemory::reset_peak() const { c10::cuda::CUDACachingAllocator::resetPeakStats(device_); }

int64_t CudaMemory::allocated_bytes() const {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device_).allocated_bytes[kAggregate].current;
}

int64_t CudaMemory::peak_allocated_bytes() const {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device_).allocated_bytes[kAggregate].peak;
}

}  // namespace protwin::rt
