#include "sim/offload/compiler/systems.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::sim::offload {

const std::vector<SystemInfo>& systems() {
  static const std::vector<SystemInfo> kSystems = {
      {"protrain", "ProTrain: chunks, persistent chunks, prefetch buffers, interleaved SWAP/CKPT, CPU Adam overlapped with backward",
       "Yang et al., arXiv 2406.08334 (MLSys 2026), §3"},
      {"deepspeed", "DeepSpeed ZeRO-3 + offload_param/offload_optimizer=cpu: per-submodule gather with prefetch, DeepSpeedCPUAdam after backward",
       "DeepSpeed 0.12 docs: ZeRO-3 Offload (stage3_prefetch_bucket_size, stage3_max_reuse_distance); DeepSpeedCPUAdam runs in optimizer.step() after backward"},
      {"zero-offload", "ZeRO-Offload (stage 2 + offload_optimizer=cpu): fp16 params on every GPU, grads offloaded, CPU Adam after backward, updated params uploaded",
       "Ren et al., ZeRO-Offload, arXiv 2101.06840, §4"},
      {"colossalai", "Colossal-AI Gemini (static placement): a fixed share of chunks on the GPU, the rest fetched on demand, HybridAdam after backward",
       "Colossal-AI 0.3 docs: Gemini / ZeRO with chunk-based memory management; PatrickStar, arXiv 2108.05818"},
      {"fsdp", "PyTorch FSDP + CPUOffload(offload_params=True): every unit on the CPU, gathered per use, resharded after forward, torch CPU Adam after backward, checkpoint every block",
       "PyTorch 2.0 FSDP docs (CPUOffload, BackwardPrefetch.BACKWARD_PRE, reshard after forward for FULL_SHARD)"},
      {"ddp", "PyTorch DDP, no offload: everything on the GPU, gradients all-reduced during backward, Adam on the GPU",
       "PyTorch DistributedDataParallel docs"},
  };
  return kSystems;
}

const SystemInfo* lookup_system(const std::string& name) {
  for (const auto& s : systems())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> system_names() {
  std::vector<std::string> names;
  for (const auto& s : systems()) names.push_back(s.name);
  return names;
}

std::string known_systems() {
  std::string known;
  for (const auto& s : systems()) known += (known.empty() ? "" : ", ") + s.name;
  return known;
}

const SystemInfo& find_system(const std::string& name) {
  const SystemInfo* s = lookup_system(name);
  PROTWIN_CHECK(s, "--system: unknown system '", name, "'; known systems: ", known_systems());
  return *s;
}

// Across nodes every system shards over, and gathers and reduces with, its whole data-parallel
// group in one flat collective; NCCL runs it as a ring through each node's GPUs and NICs, which
// the compiler marks (Op::group.ranks_per_node) and the cost model prices per level. No system here
// switches to a hierarchical scheme by default:
// - DeepSpeed 0.12 ZeRO-3 (runtime/zero/partition_parameters.py): all_gather_coalesced gathers
//   each partitioned parameter over ds_process_group, the whole DP world; stage3.py
//   reduce-scatters the gradients over dp_process_group. Node-local gathers exist only in the
//   opt-in MiCS (runtime/zero/mics.py, hierarchical all-gather groups) and ZeRO++ hpZ
//   (zero_hpz_partition_size, default 1).
// - PyTorch 2.0 FSDP FULL_SHARD (distributed/fsdp/flat_param.py, _runtime_utils.py):
//   all_gather_into_tensor of each unit's flat parameter and reduce_scatter_tensor of its
//   gradient over the process group (the world); HYBRID_SHARD, which shards inside a node
//   only, is opt-in.
// - Colossal-AI Gemini (zero/gemini/chunk/chunk.py): Chunk.__gather is all_gather_into_tensor
//   over the chunk's torch_pg (its ZeRO group, every DP rank); the gradient chunk is
//   reduce-scattered over the same group.
// - ProTrain (REFERENCE §1): ZeRO-3-style sharding over all ranks, chunks all-gathered and
//   reduce-scattered with NCCL; DDP all-reduces over all ranks.
OffloadKnobs base_knobs(const std::string& system) {
  find_system(system);
  OffloadKnobs k;
  k.host_work = system;
  if (system == "deepspeed") {
    k.per_block_chunks = true;      // parameters gathered per submodule (transformer block)
    k.cpu_adam_overlap = false;     // optimizer.step() after backward
    k.buffer_reuse = true;          // stage3_max_reuse_distance keeps the last layers' params
    k.grad_reuses_param_buffer = false;  // separate CPU gradient partition
    // stage3.py: the pinned fp16 grad_partitions_flat_buffer (2 B) and the fp32 gradient buffer of
    // each sub-group (4 B); with the fp16 params, fp32 master and Adam m, v: 20 B/param on the host,
    // as DeepSpeed issue #846 measured ("a 10B parameter will take about 200 GB of CPU memory").
    k.host_grad_bytes = 6;
    // stage3.py partition_grads: grad_buffer.copy_(grad, non_blocking) into that pinned buffer,
    // grad_buffer.to(device) for the norm, then fp32_grad.copy_(grad_buffer): a blocking D2H into
    // a pageable fp16 temporary (ATen's copy_ across devices and dtypes) cast on the CPU.
    k.grad_roundtrip = true;
    // Its pinned buffers through tensor.pin_memory() (model_state_bytes.h), with pin_memory set for
    // offload_param and offload_optimizer as REFERENCE §2 and HF's ZeRO-3 offload example do.
    k.pinned_alloc = "torch_flat";
    // stage3.py step(): has_overflow over grad_partitions_flat_buffer, unscale_and_clip_grads
    // (fp32 grad mul_, even at scale 1) and _reassign_or_swap_out_partitioned_parameters
    // (fp16 copy_ of the fp32 master): DeepSpeedCPUAdam is called without fp16_param_groups.
    k.step_host_passes = true;
  } else if (system == "zero-offload") {
    k.per_block_chunks = true;      // gradient buckets per block
    k.cpu_adam_overlap = false;
    k.persistent_gpu_adam = false;  // fp16 params stay on the GPU, the optimizer on the CPU
    k.grad_reuses_param_buffer = false;
    k.host_grad_bytes = 4;  // stage_1_and_2.py: single_partition_of_fp32_groups[i].grad (fp32, CPU)
  } else if (system == "colossalai") {
    k.cpu_adam_overlap = false;     // HybridAdam in optimizer.step() after backward
    k.prefetch = false;             // static placement: chunks moved when the compute reaches them
  } else if (system == "fsdp") {
    k.per_block_chunks = true;      // one FSDP unit per transformer block
    k.cpu_adam_overlap = false;
    k.cpu_adam_impl = "torch";      // torch.optim.Adam on CPU tensors
    k.buffer_reuse = false;         // FULL_SHARD reshards after forward
    k.n_buffer = 2;                 // the current unit plus one prefetched (BACKWARD_PRE)
    k.grad_reuses_param_buffer = false;  // CPU params and CPU grads are separate tensors
    // flat_param.py with MixedPrecision(param_dtype=fp16): the pinned fp32 _local_shard is the
    // optimizer's parameter; _use_low_precision_shard copies it up in fp32 (.to(device,
    // non_blocking=True)) and casts it into _mp_shard on the GPU; _offload_grad copies the
    // reduced gradient into the fp32 _cpu_grad with a non_blocking copy_, which ATen converts on
    // the GPU before the copy (Copy.cu). So 4 B per parameter cross PCIe each way.
    k.host_fp32_params = true;
    k.host_grad_bytes = 4;
    k.pinned_alloc = "torch_per_chunk";  // flat_param.py: _local_shard and _cpu_grad .pin_memory()
  } else if (system == "ddp") {
    k.offload = false;
  }
  return k;
}

KnobSpace knob_space(const std::string& system, int n_chunks, int layers, int min_buffers) {
  KnobSpace s;
  auto range = [](int lo, int hi) {
    std::vector<int> v;
    for (int i = lo; i <= hi; ++i) v.push_back(i);
    return v;
  };
  const int max_buffers = std::max(min_buffers, std::min(n_chunks, 8));
  if (system == "protrain") {
    s.n_persist = range(0, n_chunks);
    s.n_buffer = range(std::max(1, min_buffers), max_buffers);
    s.n_swap = range(0, layers);
  } else if (system == "deepspeed") {
    s.n_persist = {0};
    s.n_buffer = range(std::max(1, min_buffers), std::min(max_buffers, std::max(min_buffers, 4)));
    s.n_swap = {0};
    s.n_checkpoint = {0, layers};
  } else if (system == "zero-offload" || system == "ddp") {  // every chunk persistent
    s.n_persist = {n_chunks};
    s.n_buffer = {1};
    s.n_swap = {0};
    s.n_checkpoint = {0, layers};
  } else if (system == "colossalai") {
    s.n_persist = range(0, n_chunks);
    s.n_buffer = {std::max(1, min_buffers)};
    s.n_swap = {0};
    s.n_checkpoint = {0, layers};
  } else if (system == "fsdp") {
    s.n_persist = {0};
    s.n_buffer = {std::max(2, min_buffers)};
    s.n_swap = {0};
    s.n_checkpoint = {layers};
  }
  return s;
}

}  // namespace protwin::sim::offload
