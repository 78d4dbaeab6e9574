#include "traces/kernel_kinds.h"

#include <algorithm>
#include <iterator>

namespace protwin::traces {

namespace {

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& kind) {
  return std::find(std::begin(names), std::end(names), kind) != std::end(names);
}

}  // namespace

bool is_kernel_kind(const std::string& kind) { return listed(kernel_kinds::kAll, kind); }

bool is_memory_bound_kind(const std::string& kind) {
  using namespace kernel_kinds;
  static const char* const kMemoryBound[] = {kLayernorm, kRmsnorm,      kGelu,      kSwiglu, kSoftmax,
                                             kDropout,   kElementwise, kCrossEntropy, kEmbedding, kRope};
  return listed(kMemoryBound, kind);
}

bool is_collective_kind(const std::string& kind) {
  using namespace kernel_kinds;
  static const char* const kCollectives[] = {kAllReduce, kAllGather, kReduceScatter, kBroadcast, kSendRecv};
  return listed(kCollectives, kind);
}

}  // namespace protwin::traces
