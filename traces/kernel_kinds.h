// The one registry of kernel-kind names (OpSignature::kind): the workload writes them into kernel
// sets, the cost model and the kernel tables price them, the Kineto importer names the kernels of
// a trace with them and the runtime's profiler measures them. A kind spelled anywhere else is a
// bug; kernel_kind_test checks the four agree.
//
// Beside these names a signature may carry a derived kind: "<kind>_backward" (the profiler's
// backward entries), "elementwise.<op>" (a named elementwise kernel), "block_forward.<block>" /
// "block_backward.<block>" (whole blocks, traces/block_signature.h), "h2d", "d2h" and their
// "_pageable" forms (copies), "kernel:<name>", "conv" and "cpu:<op>" (Kineto kernels protwin
// does not model).
#pragma once

#include <string>

namespace protwin::traces::kernel_kinds {

// Matrix multiplies and attention.
inline constexpr char kGemm[] = "gemm";                      // {m, n, k}
inline constexpr char kBmm[] = "bmm";                        // {batch, m, n, k}
inline constexpr char kAttention[] = "attention";            // {batch*heads, seq_q, seq_k, head_dim}
inline constexpr char kFlashAttention[] = "flash_attention"; // as attention
// Memory-bound kernels: {elements} (cross_entropy {rows, vocab}).
inline constexpr char kLayernorm[] = "layernorm";
inline constexpr char kRmsnorm[] = "rmsnorm";
inline constexpr char kGelu[] = "gelu";
inline constexpr char kSwiglu[] = "swiglu";
inline constexpr char kSoftmax[] = "softmax";
inline constexpr char kDropout[] = "dropout";
inline constexpr char kElementwise[] = "elementwise";
inline constexpr char kCrossEntropy[] = "cross_entropy";
inline constexpr char kEmbedding[] = "embedding";
inline constexpr char kRope[] = "rope";
inline constexpr char kRelu[] = "relu";
inline constexpr char kAdam[] = "adam";                      // the device optimizer step
// Collectives: {bytes, ranks, ranks_per_node}.
inline constexpr char kAllReduce[] = "all_reduce";
inline constexpr char kAllGather[] = "all_gather";
inline constexpr char kReduceScatter[] = "reduce_scatter";
inline constexpr char kBroadcast[] = "broadcast";
inline constexpr char kSendRecv[] = "send_recv";

// Every name above, in this order.
inline constexpr const char* kAll[] = {kGemm,     kBmm,     kAttention,   kFlashAttention, kLayernorm, kRmsnorm,
                                       kGelu,     kSwiglu,  kSoftmax,     kDropout,        kElementwise,
                                       kCrossEntropy, kEmbedding, kRope, kRelu, kAdam, kAllReduce, kAllGather,
                                       kReduceScatter, kBroadcast, kSendRecv};

}  // namespace protwin::traces::kernel_kinds

namespace protwin::traces {

// A name of the registry (not a derived kind).
bool is_kernel_kind(const std::string& kind);
// Priced by the bytes they move: layernorm, rmsnorm, gelu, swiglu, softmax, dropout, elementwise,
// cross_entropy, embedding, rope.
bool is_memory_bound_kind(const std::string& kind);
// all_reduce, all_gather, reduce_scatter, broadcast, send_recv.
bool is_collective_kind(const std::string& kind);

}  // namespace protwin::traces
