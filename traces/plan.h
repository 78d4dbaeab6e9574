// Plan IR version 4 (DESIGN §3): a prescription of one training iteration.
//
// A Plan holds work (flops, bytes, params), never durations. The simulator and the runtime read
// the same Plan; validate() is shared by both and runs before anything executes.
//
// JSON: {"format": "protwin.plan", "version": 4, "meta": {...}, "streams": [...],
//        "tensors": [...], "chunks": [...], "kernel_sets": [[kernel, ...], ...], "ops": [...]}
// Each distinct kernel set is listed once and a compute op names its set by index ("kernels": i).
// Everything the simulator and the runtime read is a typed field: a chunk's residency and
// optimizer placement (ChunkSpec), a copy's "pinned", a collective's "group" {ranks,
// ranks_per_node, groups_per_node, scope}, an op's sub-kind ("sub_kind": what a copy moves, which
// host pass, CPU Adam's implementation), its host work ("host" {hooks, eager_ops, copies},
// "host_sync"), a device step's "launches" and "bytes_per_param", and the plan's ranks, nodes and
// dtype (Plan::gpus/nodes/dtype, written in meta). An op's attrs only describe it. Only version 4
// is read: an older file is refused with the command that writes it again (kPlanRecompile).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/op_signature.h"
#include "traces/units.h"

namespace protwin::traces {

class AtomicFileWriter;
class ArraySplicer;

inline constexpr const char* kPlanFormat = "protwin.plan";
inline constexpr int kPlanVersion = 4;  // written and read (no other version is)
// The commands that write a plan of this version (the hint of the errors that refuse a plan).
inline constexpr const char* kPlanRecompile =
    "protwin simulate --model M --machine H --policy knobs.json --plan-out plan.json (the old plan's meta names its "
    "model, machine and knobs), or protwin search --model M --machine H -o plan.json";

// The largest pool capacity, tensor and memory effect a Plan may hold (1 PiB); the sum of a pool's
// effects is bounded too, so no memory walk overflows int64.
inline constexpr int64_t kMaxPlanBytes = int64_t{1} << 50;

// The op kinds (kinds only ever grow; JSON names in to_string). Reading a plan with any other
// kind fails naming its pointer.
enum class OpKind : uint8_t {
  kForward, kBackward, kRecompute, kH2D, kD2H, kAllGather, kReduceScatter, kAllReduce, kBroadcast,
  kSendRecv, kAdamCpu, kAdamDevice, kHostCast, kHostPass, kAlloc, kFree,
  kArrive  // a rank's arrival at a collective's rendezvous (sim/engine/joint_ranks.h); costs nothing
};
const char* to_string(OpKind k);                        // "forward", "h2d", ...
OpKind op_kind_named(const std::string& name);          // throws protwin::Error for an unknown name
std::ostream& operator<<(std::ostream& os, OpKind k);   // its name (test messages)
inline bool is_copy(OpKind k) { return k == OpKind::kH2D || k == OpKind::kD2H; }
// all_gather, reduce_scatter, all_reduce, broadcast (send_recv is point to point).
inline bool is_collective(OpKind k) {
  return k == OpKind::kAllGather || k == OpKind::kReduceScatter || k == OpKind::kAllReduce || k == OpKind::kBroadcast;
}
// Every rank of a group takes part: the collectives and send_recv.
inline bool is_rendezvous(OpKind k) { return is_collective(k) || k == OpKind::kSendRecv; }
// Work of the host CPU, not issued to the GPU: CPU Adam and the passes over host memory.
inline bool is_cpu_work(OpKind k) { return k == OpKind::kAdamCpu || k == OpKind::kHostCast || k == OpKind::kHostPass; }

// What an op of a kind does more precisely:
//  h2d: param_chunk, activation, updated_params (DeepSpeed's fp16 params after the CPU step),
//       grad_roundtrip (Colossal-AI's gradient back to the device);
//  d2h: activation, grad_chunk, partial_grad_chunk (not every block's gradient yet), grad_fp32
//       (FSDP's fp32 gradient into pageable memory);
//  host_pass: overflow_scan, unscale, fp16_copy (DeepSpeed's CPU step passes);
//  adam_cpu: torch (torch.optim.Adam on CPU tensors instead of the SIMD CPU Adam).
enum class OpSubKind : uint8_t {
  kNone, kParamChunk, kActivation, kUpdatedParams, kGradRoundtrip, kGradChunk, kPartialGradChunk, kGradFp32,
  kOverflowScan, kUnscale, kFp16Copy, kTorch
};
const char* to_string(OpSubKind k);  // "" for kNone
// Whether `sub` is a sub-kind of `kind` (kNone fits every kind).
bool sub_kind_fits(OpKind kind, OpSubKind sub);
// "param_chunk, activation, ..." of `kind` for messages.
std::string sub_kinds_text(OpKind kind);

// A memory pool the plan uses, with its capacity (from meta.pools).
struct PoolSpec {
  std::string name;          // "gpu", "pinned", "pageable", ...
  Bytes capacity;            // capacity_bytes
  Bytes initial;             // initial_bytes: resident before the first op (e.g. persistent chunks)
};

// A named in-order queue; ops on one stream run in listed order, as on a CUDA stream.
struct StreamSpec {
  std::string name;                    // compute, h2d, d2h, cpu_optim, collective, ...
  std::vector<std::string> reads_from; // pools a tensor must be resident in when an op here reads it
                                       // (empty: any pool)
};

enum class TensorKind { kParamChunk, kGradChunk, kOptimState, kActivation, kBuffer, kOther };

struct TensorSpec {
  int id = 0;
  std::string name;
  Bytes bytes;
  std::string dtype = "fp32";
  TensorKind kind = TensorKind::kOther;
  std::string home;              // pool where it lives at the start of the iteration ("" = nowhere)
};

// One parameter inside a chunk: which parameter, at what element offset, with what shape.
struct ChunkParam {
  std::string name;
  int64_t offset = 0;            // elements from the chunk start
  std::vector<int64_t> shape;
};

struct ChunkSpec {
  int id = 0;
  Bytes bytes;                   // chunk capacity in bytes (all chunks of a plan usually equal)
  std::string dtype = "fp16";
  std::vector<ChunkParam> params;
  // What the runtime replays: whether the chunk stays on the GPU all iteration (else its home is
  // host memory and it visits the GPU in a buffer), and where its optimizer step runs ("device" |
  // "host"). Unset (std::nullopt, "") in hand-written plans.
  std::optional<bool> resident;
  std::string optimizer;
};

enum class MemAt { kStart, kEnd };

// A change of a pool's bytes at the start or end of an op; `tensor` (optional, -1 = none) makes
// the tensor resident in (delta > 0) or gone from (delta < 0) that pool.
struct MemEffect {
  std::string pool;
  int64_t delta_bytes = 0;
  MemAt at = MemAt::kStart;
  int tensor = -1;
};

struct Work {
  double flops = 0;
  int64_t bytes = 0;
  int64_t params = 0;
};

// The group a collective or send_recv runs over. ranks 0: meta.gpus ranks; ranks_per_node 0: not
// placed on nodes (then inter_node picks the machine's inter-node domain); groups_per_node: the
// groups sharing a node's NICs (0: all of its GPUs in such groups; hwmodels/collective_model.h).
struct CollectiveGroup {
  int ranks = 0;
  int ranks_per_node = 0;
  int16_t groups_per_node = 0;
  bool inter_node = false;
};

// A system's own host work around an op beyond its kernels (sim/offload/compiler/host_work.h): Python hooks,
// small eager ops and small copy calls, priced with the machine's host_dispatch section.
struct HostWork {
  static constexpr int kMax = 65535;
  uint16_t hooks = 0, eager_ops = 0, copies = 0;
  bool empty() const { return hooks == 0 && eager_ops == 0 && copies == 0; }
};

// Fields in an order that packs them (224 bytes): the event loop reads a million of these.
struct Op {
  int id = 0;
  OpKind kind = OpKind::kForward;
  OpSubKind sub_kind = OpSubKind::kNone;
  std::optional<bool> pinned;    // a copy's host memory pinned, else pageable (unset: pageable when
                                 // a tensor it reads lives in the "pageable" pool)
  int block = -1;
  int chunk = -1;
  int priority = 0;              // ties at equal time: lower runs first, then lower id
  int kernels = -1;              // the kernels it runs: an index into Plan::kernel_sets (-1: none)
  CollectiveGroup group;         // collectives and send_recv
  HostWork host;                 // the system's host work around the op
  uint16_t launches = 0;         // adam_device: its multi-tensor launches (0: one)
  bool host_sync = false;        // the host waits for the op's end before it issues more (.item(),
                                 // torch.cuda.synchronize(), a blocking copy)
  double bytes_per_param = 0;    // adam_device: the framework's own step traffic (0: the machine's
                                 // fused device Adam)
  std::string stream;
  std::vector<int> reads, writes, deps;
  Work work;
  std::vector<MemEffect> mem;
  nlohmann::json attrs;          // free-form descriptive details (block name, part, group name)
};

struct Plan {
  // model, machine, batch, knobs, generator, ... (free-form; gpus, nodes and dtype are the typed
  // fields below, written into meta by plan_meta_json)
  nlohmann::json meta = nlohmann::json::object();
  int gpus = 0;                                    // ranks of the plan (0: unset, one)
  int nodes = 0;                                   // nodes they span (0: unset, one)
  std::string dtype;                               // compute dtype ("": unset)
  std::vector<PoolSpec> pools;                     // written into meta.pools
  std::vector<StreamSpec> streams;
  std::vector<TensorSpec> tensors;
  std::vector<ChunkSpec> chunks;
  std::vector<KernelSet> kernel_sets;              // each distinct set once; ops index it
  std::vector<Op> ops;
  std::string source;  // the file it was read from ("" when built in memory); names it in errors

  int stream_index(const std::string& name) const;  // -1 if unknown
  int pool_index(const std::string& name) const;    // -1 if unknown
  // The index of a set equal to `ks`, added when the plan has none.
  int add_kernel_set(KernelSet ks);
  // The kernels `op` runs (empty: none).
  const KernelSet& kernels_of(const Op& op) const;
  int ranks() const { return gpus > 0 ? gpus : 1; }
  // Ranks that share one host's cores and DRAM: gpus over nodes, at most `gpus_per_node`.
  int ranks_per_host(int gpus_per_node) const;
};

// meta with the typed gpus, nodes and dtype (as plan files and Report meta.plan hold it).
nlohmann::json plan_meta_json(const Plan& plan);

// Per-pool result of the sequential memory walk of validate().
struct PoolHighWater {
  std::string name;
  Bytes capacity;
  Bytes high_water;
  int op_at_high_water = -1;
};

struct ValidationResult {
  std::vector<PoolHighWater> pools;     // each pool's high-water bound over all valid schedules
};

// Parses a Plan document; errors name `source` and the JSON pointer.
Plan plan_from_json(const nlohmann::json& j, const std::string& source);
Plan read_plan(const std::string& path);
nlohmann::json plan_to_json(const Plan& plan);
void write_plan(const Plan& plan, const std::string& path);  // atomic, streamed (op by op)

// The same file written as the ops come (a plan generated op by op is never held whole): the
// header's meta, streams, pools, tensors, chunks and kernel sets first, then each op in id order; commit()
// renames the temporary file over `path` (without it, nothing is written).
class PlanWriter {
 public:
  PlanWriter(const std::string& path, const Plan& header);
  ~PlanWriter();
  void add(const Op& op);
  void commit();

 private:
  std::unique_ptr<AtomicFileWriter> out_;
  std::unique_ptr<ArraySplicer> splice_;
  size_t kernel_sets_;  // the header's, written in the frame: every op's set must be among them
};

// The checks of one op that need only its plan's header (streams, tensors, kernel sets), no other
// op: its stream (`stream`, its index: -1 unknown), kernel set, work not negative, dependencies
// not negative nor itself, known tensors, memory effects in range. validate() runs it on every op,
// and the simulator on every op it takes (a streamed plan is never whole, so never validated).
// Each resolves the pools itself. Throws protwin::Error naming the op.
void check_op(const Plan& header, const Op& op, int stream);

// Checks a plan before anything runs: ids dense and topologically ordered, streams, tensors and
// pools exist, bytes non-negative, the dependency graph (deps + in-order streams) is a DAG,
// tensors are resident where read (in id order), and no pool's high-water bound (under any
// schedule the dependencies and in-order streams allow) exceeds its capacity. Throws
// protwin::Error naming the op ("plan op 17 (h2d, stream h2d)") and the pool or tensor.
ValidationResult validate(const Plan& plan);

// "plan op 17 (h2d, stream h2d)": how errors name an op.
std::string describe_op(const Op& op);
// "p.json:/ops/17 (h2d, stream h2d)" for a plan read from a file, else as above.
std::string describe_op(const Plan& plan, const Op& op);

const char* to_string(TensorKind k);

}  // namespace protwin::traces
