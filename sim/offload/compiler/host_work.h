// Each system's own host work per block (issue #18 part 3): the Python hooks, small eager ops and
// small copies its code runs around a block's forward and backward, beyond the block's kernels.
// The offload compiler puts them in the block's op (traces::Op::host {hooks, eager_ops, copies});
// HardwareCostModel prices them with the machine's host_dispatch section.
//
// Counted from the systems' code (modules and parameters from the block's parameter names: a
// module is every dotted prefix of a parameter's name but the bare "layers" list, so
// parameter-free modules such as dropout are left out and the counts are lower bounds):
//  - DeepSpeed ZeRO-3 (deepspeed/runtime/zero/parameter_offload.py,
//    DeepSpeedZeRoOffload._register_hooks_recursively): every module gets a forward pre-hook and
//    a forward hook (_pre_forward_module_hook -> PartitionedParameterCoordinator.fetch_sub_module,
//    _post_forward_module_hook -> release_sub_module) and, through _apply_to_tensors_only's
//    PreBackwardFunction / PostBackwardFunction, a backward pre and post hook doing the same:
//    2 hooks per module each way; fetch and release touch each parameter (its ds_tensor view and
//    param.partition(): one eager op each way). stage3.py create_reduce_and_remove_grad_hooks
//    puts a hook on every parameter's gradient accumulator (reduce_partition_and_remove_grads):
//    1 hook, the copy into the IPG bucket (one eager op) and, with offload_optimizer,
//    partition_grads' two small copies per parameter (grad_buffer.copy_, fp32_grad_tensor.copy_).
//    Across ranks (0.12.1 partition_parameters.py), each fetch also runs torch.cat once into the
//    send buffer and once per parameter in AllGatherCoalescedHandle.wait (1 + params eager ops;
//    the narrow views and record_stream calls around them are left out).
//  - PyTorch FSDP (torch/distributed/fsdp/_runtime_utils.py): per unit (one per block here)
//    _pre_forward and _post_forward, _pre_backward_hook and _post_backward_hook: 2 hooks each
//    way; one flat parameter per unit, so no per-parameter work.
//  - Colossal-AI Gemini (colossalai/zero/gemini/gemini_hook.py GeminiZeROHook, through
//    colossalai/tensor/param_op_hook.py ColoParamOpHook): pre_op and post_op around every op that
//    uses parameters (one per parameterised module) in forward, pre_backward / post_backward in
//    backward: 2 hooks per such module each way; gemini_ddp.py GeminiDDP.grad_handle per
//    parameter in backward (1 hook and its copy into the gradient chunk: one eager op).
//  - ProTrain (REFERENCE §1): hooks on the block (chunk prefetch and release): 2 each way.
//  - DDP (torch/nn/parallel/distributed.py, reducer.cpp): the per-parameter autograd hook is C++
//    (no Python hook); it copies each gradient into its bucket: one eager op per parameter.
#pragma once

#include <string>
#include <vector>

#include "sim/workload/workload.h"
#include "traces/plan.h"

namespace protwin::sim::offload {

struct HostWork {
  int hooks = 0, eager_ops = 0, copies = 0;
  bool sync = false;  // the host waits for the op's end
};

// `system`: a name of systems.h; unknown names and zoo blocks without parameters: no work.
// `ranks`: the data-parallel ranks the block's parameters are partitioned over.
HostWork block_host_work(const std::string& system, const Block& block, bool backward, int64_t ranks = 1);

// DeepSpeed 0.12.1's parameter fetch, as its code does it (the version ProTrain compared with,
// REFERENCE.md; deepspeed/runtime/zero/partition_parameters.py). Each fetch of a block:
//  - fetch_host_work: with offload_param the partitions live in pinned host memory, and
//    all_gather_coalesced (_all_gather_dtype) copies every parameter's partition up with
//    p.ds_tensor.to(device), a blocking copy (non_blocking=False: the host waits for it), one call
//    per parameter; on one rank NoGatherCoalescedHandle copies them non-blocking and its wait()
//    synchronises the stream. Both: `tensors` copy calls (copies = tensors - 1, the fetch's own
//    copy op being the first) and the host waits for the fetch (sync). None for other systems.
//  - fetch_kernels: with ranks > 1, torch.cat of the partitions into the flat send buffer (read and
//    write the shard) and AllGatherCoalescedHandle.wait's torch.cat per parameter of its ranks'
//    slices into a contiguous tensor (read and write the whole parameter), in the chunks' `dtype`;
//    their eager ops are in block_host_work. Empty otherwise.
HostWork fetch_host_work(const std::string& system, int64_t tensors);
std::vector<traces::Kernel> fetch_kernels(const std::string& system, const Block& block, int64_t ranks,
                                          const std::string& dtype);
// DeepSpeed 0.12.1's passes over a block's gradients before their reduce-scatter (stage3.py with
// its defaults contiguous_gradients and reduce_scatter on, fp16 communication, no pre-divide
// factor): __add_grad_to_ipg_bucket copies every gradient into the flat IPG bucket
// (`new_grad_tensor.copy_(param.grad, non_blocking=True)`), and __avg_scatter_grads'
// reduce_scatter_coalesced (runtime/comm/coalesced_collectives.py) concatenates the bucket's
// rank partitions into its flat buffer (`torch.cat`) and pre-divides it (`div_(world_sz)`): three
// passes reading and writing the block's whole gradient in `dtype`. Empty for other systems.
std::vector<traces::Kernel> grad_reduce_kernels(const std::string& system, const Block& block,
                                                const std::string& dtype);

// Colossal-AI 0.3.3 Gemini once a chunk's gradient is reduced (gemini_ddp.py GeminiDDP.grad_handle,
// when reduce_chunk returns true; chunk/chunk.py): `cuda_shard.div_(pg_size)`, then
// has_inf_or_nan: `torch.isinf(shard).any().item() | torch.isnan(shard).any().item()`, two
// reductions each ended by an .item() (a one-element copy down; the host waits), and
// move_chunk(chunk, grads_device, force_copy=True): for a chunk whose gradient lives on the CPU,
// shard_move's `cpu_shard.copy_(cuda_shard)`, a copy without non_blocking (the host waits for
// it). l2 norms (set_l2_norm) only with gradient clipping, which is left out.
//  - reduced_grad_kernels: div_ (read, write the shard), isinf + any, isnan + any (read the
//    shard, write and read one byte per element), in the chunks' `dtype`; empty for other systems.
//  - reduced_grad_host_work: 2 copies and the host waits (the two .item()); none otherwise.
//  - grad_offload_host_work: the host waits (the blocking copy_); none otherwise.
std::vector<traces::Kernel> reduced_grad_kernels(const std::string& system, int64_t shard_elems,
                                                 const std::string& dtype);
HostWork reduced_grad_host_work(const std::string& system);
HostWork grad_offload_host_work(const std::string& system);
// Puts `w` on the op (Op::host, Op::host_sync); counts beyond traces::HostWork::kMax are an
// internal error.
void set_host_work(traces::Op& op, const HostWork& w);
// Adds `w` to the op's host work: counts add up, sync stays set once set.
void add_host_work(traces::Op& op, const HostWork& w);

}  // namespace protwin::sim::offload
