#include "runtime/memory/copy_engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace protwin::rt {

namespace {
// Small enough that the throttle tracks the rate closely, large enough that memcpy runs at speed.
constexpr size_t kSliceBytes = size_t{1} << 20;
}  // namespace

CopyEngine::CopyEngine(double gbps) : gbps_(gbps) {}

void CopyEngine::copy(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  while (done < bytes) {
    const size_t n = std::min(kSliceBytes, bytes - done);
    std::memcpy(d + done, s + done, n);
    done += n;
    if (gbps_ > 0) {
      // Earliest time at which `done` bytes are allowed to have crossed the link.
      const auto due = t0 + std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(done) / gbps_));
      std::this_thread::sleep_until(due);
    }
  }
  bytes_copied_ += static_cast<int64_t>(bytes);
}

}  // namespace protwin::rt
