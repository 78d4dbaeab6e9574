// A copy worker's engine on the emulated device: real memcpy between host and "device" memory,
// optionally throttled to a link bandwidth so a host<->device direction behaves like PCIe.
// One engine per direction (h2d, d2h), used by that stream's single worker thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace protwin::rt {

class CopyEngine {
 public:
  // gbps <= 0: unthrottled (memcpy speed).
  explicit CopyEngine(double gbps = 0.0);

  // Copies `bytes` from src to dst in slices; when throttled, sleeps after each slice so that
  // bytes copied / elapsed time never exceeds the link rate (1 GB/s = 1 byte/ns).
  void copy(void* dst, const void* src, size_t bytes);

  double gbps() const { return gbps_; }
  int64_t bytes_copied() const { return bytes_copied_; }

 private:
  double gbps_;
  int64_t bytes_copied_ = 0;
};

}  // namespace protwin::rt
