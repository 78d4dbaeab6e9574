// The knobs of one offloading policy. ProTrain's five knobs plus the behaviour switches that tell
// the baseline systems apart (REFERENCE §1–2); a system is a family = fixed switches + a knob grid
// (systems.h). One compiler (offload_compiler.h) turns any setting into a Plan.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace protwin::sim::offload {

enum class ActMode { kNone, kCheckpoint, kSwap };

struct OffloadKnobs {
  // ProTrain's knobs.
  int64_t chunk_bytes = 0;   // fp16/bf16 bytes per chunk; 0 = the grid size with least waste
                             // (must stay 0 with per_block_chunks: the blocks are the chunks)
  int n_persist = 0;         // leading chunks kept on the GPU all iteration
  int n_buffer = 2;          // GPU chunk buffers for the non-persistent chunks
  int n_swap = 0;            // decoder layers whose activations are swapped to pinned host memory
  int n_checkpoint = 0;      // decoder layers recomputed in backward
  int swap_spacing = 1;      // layers between two SWAP layers (derived from compute time)

  // Behaviour switches (defaults = ProTrain).
  bool per_block_chunks = false;      // one chunk per block (DeepSpeed/FSDP gather per submodule)
  bool prefetch = true;               // upload ahead of use (false: only when compute reaches it)
  bool buffer_reuse = true;           // chunks still in a buffer after forward serve backward
  bool cpu_adam_overlap = true;       // CPU Adam per chunk during backward (false: after backward)
  std::string host_work = "protrain";  // whose hooks run around each block (sim/offload/compiler/host_work.h);
                                       // set from the system, not a JSON knob
  std::string cpu_adam_impl = "simd"; // "simd" (DeepSpeedCPUAdam/ProTrain) | "torch" (torch.optim.Adam)
  bool persistent_gpu_adam = true;    // persistent chunks' Adam on the GPU (false: ZeRO-Offload)
  bool offload = true;                // false: DDP, everything on the GPU
  bool grad_reuses_param_buffer = true;  // the offloaded fp16 grad overwrites the chunk's pinned fp16
                                         // params (PatrickStar/Gemini/ProTrain chunks); false: a
                                         // separate pinned grad partition (DeepSpeed, FSDP)
  int host_grad_bytes = 0;  // bytes per parameter of that separate host gradient storage (0: the
                            // parameters' dtype); DeepSpeed stage 3 keeps an fp16 and an fp32 one
  bool grad_roundtrip = false;  // DeepSpeed stage 3 partition_grads with offload_optimizer: the fp16
                                // grad goes D2H into the pinned buffer, back H2D for its norm, then
                                // D2H again, blocking, into a pageable temporary the CPU casts into
                                // the fp32 gradient; backward waits for it
  bool step_host_passes = false;  // DeepSpeed stage 3 step(): an overflow scan of the host fp16
                                  // grads (isinf/isnan .any(), ~8 B/param), then per sub-group the
                                  // unscale mul_ of the fp32 grad (8 B) and, after Adam, the fp32 to
                                  // fp16 parameter copy (6 B): CPU passes (ops host_pass) priced at
                                  // the DRAM bound or the machine's measured host_passes
  bool host_fp32_params = false;  // FSDP with CPUOffload and MixedPrecision: the offloaded parameter
                                  // shard is the fp32 flat parameter itself (no separate master),
                                  // copied up in fp32 and cast on the GPU; the reduced gradient is
                                  // cast to fp32 on the GPU and copied down into the fp32 CPU grad
  std::string pinned_alloc = "exact";  // how pinned host memory is allocated: "exact" (ProTrain),
                                       // "torch_per_chunk" (FSDP), "torch_flat" (DeepSpeed stage 3);
                                       // see model_state_bytes.h

  nlohmann::json to_json() const;
};

const char* act_mode_name(ActMode m);

// Bytes per rank of a chunk's separate host gradient storage: host_grad_bytes per parameter, or
// (0) the parameters' own shard size (`shard`).
int64_t host_grad_shard(const OffloadKnobs& k, int64_t chunk_elems, int64_t shard, int64_t ranks);

// Bytes per rank of an offloaded chunk's host parameter shard, which is also what one fetch copies
// up and one gradient offload copies down: fp32 under host_fp32_params, else the chunk's dtype
// (`shard`).
int64_t host_param_shard(const OffloadKnobs& k, int64_t chunk_elems, int64_t shard, int64_t ranks);

// Refuses a cpu_adam_impl (simd, torch) or pinned_alloc (exact, torch_per_chunk, torch_flat) of
// another value, naming the knob and its values (knobs set in code; knobs_from_json already checks
// a file's with its JSON pointer).
void check_choice_knobs(const OffloadKnobs& k);

// A policy file: {"system": "protrain", "n_persist": 2, ...}. Unset knobs keep the system's
// defaults; unknown keys and bad values are errors naming `source` and the JSON pointer.
OffloadKnobs knobs_from_json(const nlohmann::json& j, const std::string& source);

// The knobs of a command line: `policy` (a policy object read from `policy_source`, e.g. --policy's
// file; an empty object and "" without one) with each "name=value" of `knob_args` (--knob) set over
// it: numbers and true/false as JSON, anything else (system, cpu_adam_impl) as a string. `check`
// (optional) runs the checks that need the workload, e.g. check_knobs. Every error names where the
// knobs came from: the file or "--knob", then the --knob arguments ("pol.json n_persist=2: ...",
// "--knob n_persist=x:/n_persist: ...").
OffloadKnobs knobs_from_args(nlohmann::json policy, const std::string& policy_source,
                             const std::vector<std::string>& knob_args,
                             const std::function<void(const OffloadKnobs&)>& check = {});

}  // namespace protwin::sim::offload
