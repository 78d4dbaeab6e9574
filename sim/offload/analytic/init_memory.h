// Memory while a system builds and shards the model, before the first step (issue #18 item 6):
// capacity is the larger of this and the steady state. Per rank, in bytes, as each system's code
// does it (N parameters, U the largest wrapping unit = block, P the largest parameter tensor):
//   ddp       the script builds the HF model whole in fp32 on the CPU (from_config), then
//             model.to(device) and DistributedDataParallel(model): host 4N.
//   fsdp      the same fp32 model on the CPU, then FullyShardedDataParallel wraps unit by unit
//             (torch/distributed/fsdp/_flat_param.py FlatParamHandle.flatten_tensors_into_flat_param:
//             torch.cat of the unit's parameters, a second copy, before shard() keeps this rank's
//             slice and frees the rest): host 4N + 4U.
//   deepspeed zero.Init (deepspeed/runtime/zero/partition_parameters.py, Init._post_init_method):
//             each module's parameters are created on the GPU in the compute dtype and partitioned
//             right after the module's __init__, partitions to pinned host (offload_param): GPU
//             e*P on top of nothing else; host: the partitions, never more than the steady state.
//   chunks    ProTrain and Colossal-AI Gemini (colossalai/lazy/lazy_init.py LazyInitContext, then
//             gemini_ddp.py GeminiDDP._init_chunks): one parameter materialised in fp32 at a time
//             and copied into its chunk and its fp32 master: transient 4P beside chunks that never
//             exceed the steady state (Adam's states come at the first step). ProTrain's own code
//             is not public here; its chunk init is taken to be Gemini's (it builds on it).
// Which one a knob setting is follows from its switches (no separate knob): offload off is DDP,
// host_fp32_params is FSDP, pinned_alloc torch_flat is DeepSpeed stage 3, else chunks.
#pragma once

#include <cstdint>
#include <string>

#include "sim/offload/compiler/knobs.h"
#include "sim/workload/workload.h"

namespace protwin::sim::offload {

struct InitMemory {
  std::string how;         // "ddp", "fsdp", "zero_init", "chunks"
  int64_t gpu_bytes = 0;   // peak GPU bytes while building (0: nothing before the steady state)
  int64_t host_bytes = 0;  // peak host bytes of one rank while building, beyond nothing else
};

InitMemory init_memory(const Workload& w, const OffloadKnobs& k);

}  // namespace protwin::sim::offload
