#include "runtime/executor/runtime_plan.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "traces/chunk_sharding.h"
#include "traces/plan_placement.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {

// meta field readers: "file:/meta/x: expected ..." on a wrong type.
const nlohmann::json& field(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  PROTWIN_CHECK(obj.is_object() && obj.contains(key), where, ": missing field \"", key, "\"");
  return obj.at(key);
}
int64_t int_field(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  const nlohmann::json& v = field(obj, key, where);
  PROTWIN_CHECK(v.is_number_integer(), where, "/", key, ": expected an integer, got ", v.dump());
  return v.get<int64_t>();
}

}  // namespace

int64_t RuntimePlan::gpu_capacity() const {
  const int i = plan.pool_index("gpu");
  return i < 0 ? 0 : plan.pools[static_cast<size_t>(i)].capacity.n;
}

int64_t RuntimePlan::gpu_high_water() const {
  for (const traces::PoolHighWater& p : validation.pools)
    if (p.name == "gpu") return p.high_water.n;
  return 0;
}

RuntimePlan make_runtime_plan(traces::Plan plan, const std::string& source, int ranks) {
  RuntimePlan rp;
  rp.source = source;
  const std::string meta = source + ":/meta";
  const nlohmann::json& m = plan.meta;
  PROTWIN_CHECK(plan.gpus >= 1, meta, "/gpus: expected at least 1, got ", plan.gpus == 0 ? "none" : std::to_string(plan.gpus));
  const int64_t gpus = plan.gpus;
  PROTWIN_CHECK(gpus == ranks, meta, "/gpus: the runtime replays one GPU per process, and this plan has ", gpus,
                " GPUs but ", ranks, ranks == 1 ? " process is" : " processes are", " running",
                ranks == 1 ? "\nhint: start one process per GPU: mpirun -np " + std::to_string(gpus) +
                                 " protwin train --plan " + source + " ... (or compile the plan with --gpus 1)"
                           : "\nhint: mpirun -np " + std::to_string(gpus));
  rp.ranks = static_cast<int>(gpus);
  const std::string& dtype = plan.dtype;
  PROTWIN_CHECK(dtype == "fp32", meta, "/dtype: the runtime replays fp32 plans, got \"", dtype,
                "\"\nhint: compile the plan with --dtype fp32");
  rp.batch = int_field(m, "batch", meta);
  rp.seq = int_field(m, "seq", meta);
  PROTWIN_CHECK(rp.batch >= 1 && rp.seq >= 1, meta, ": batch and seq must be positive");
  PROTWIN_CHECK(rp.batch <= 65536 && rp.seq <= (int64_t{1} << 20), meta, ": batch ", rp.batch, " x seq ", rp.seq,
                " is out of range (batch at most 65536, seq at most 2^20, as the CLI's flags)");
  // The ops were compiled for some batch x seq; the runtime allocates for meta's. The embedding's
  // kept activation is the token ids (int64), so its size says which batch x seq the ops are for.
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].name == "act.embedding" && plan.tensors[i].kind == traces::TensorKind::kActivation)
      PROTWIN_CHECK(plan.tensors[i].bytes.n == rp.batch * rp.seq * 8, source, ":/tensors/", i,
                    "/bytes: the embedding's activation (the token ids, 8 B each) is ", plan.tensors[i].bytes.n,
                    " bytes, but meta.batch x meta.seq = ", rp.batch, " x ", rp.seq, " tokens need ",
                    rp.batch * rp.seq * 8, ": the plan's meta disagrees with its ops");
  rp.model = traces::model_from_json(field(m, "model_spec", meta), source, "/meta/model_spec");
  check_runtime_model(rp.model, rp.seq, source, "/meta/model_spec");
  PROTWIN_CHECK(plan.pool_index("gpu") >= 0, meta, "/pools: the plan has no \"gpu\" pool");

  // Block modes from the ops (meta.layer_modes is not read): traces/plan_placement.h.
  for (const traces::LayerKeep keep : traces::layer_keeps(plan, static_cast<int>(rp.model.layers)))
    rp.layer_modes.push_back(keep == traces::LayerKeep::kInput     ? LayerMode::kCheckpoint
                             : keep == traces::LayerKeep::kSwapped ? LayerMode::kSwap
                                                                   : LayerMode::kNone);

  // Chunks onto the runtime's parameters: every parameter exactly once, same shape.
  const std::vector<ParamTensor> specs = stored_parameters(rp.model);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < specs.size(); ++i) index[specs[i].name] = i;
  rp.chunks.slots.assign(specs.size(), ParamSlot{-1, 0, 0});
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const traces::ChunkSpec& ch = plan.chunks[c];
    const std::string where = source + ":/chunks/" + std::to_string(c);
    PROTWIN_CHECK(ch.id == static_cast<int>(c), where, "/id: expected ", c, ", got ", ch.id);
    PROTWIN_CHECK(ch.dtype == "fp32", where, "/dtype: the runtime replays fp32 chunks, got \"", ch.dtype, "\"");
    int64_t used = 0;
    for (size_t j = 0; j < ch.params.size(); ++j) {
      const traces::ChunkParam& p = ch.params[j];
      const std::string pw = where + "/params/" + std::to_string(j);
      auto it = index.find(p.name);
      PROTWIN_CHECK(it != index.end(), pw, "/name: \"", p.name, "\" is not a parameter of the runtime's ",
                    rp.model.family, " model");
      const ParamTensor& s = specs[it->second];
      PROTWIN_CHECK(p.shape == s.shape, pw, "/shape: ", nlohmann::json(p.shape).dump(), " for ", p.name,
                    ", the runtime's model has ", nlohmann::json(s.shape).dump());
      PROTWIN_CHECK(rp.chunks.slots[it->second].chunk < 0, pw, "/name: ", p.name, " appears in two chunks");
      PROTWIN_CHECK(p.offset >= 0 && p.offset <= ch.bytes.n / 4, pw, "/offset: ", p.offset,
                    " is outside the chunk's ", ch.bytes.n / 4, " fp32 elements");
      rp.chunks.slots[it->second] = ParamSlot{static_cast<int>(c), p.offset, s.numel};
      used = std::max(used, p.offset + s.numel);
    }
    // Parameters share a chunk side by side: two that overlap would overwrite each other.
    std::vector<std::pair<int64_t, size_t>> starts;  // (offset, index in params)
    for (size_t j = 0; j < ch.params.size(); ++j) starts.emplace_back(ch.params[j].offset, j);
    std::sort(starts.begin(), starts.end());
    for (size_t j = 1; j < starts.size(); ++j) {
      const traces::ChunkParam& prev = ch.params[starts[j - 1].second];
      const int64_t prev_end = prev.offset + specs[index.at(prev.name)].numel;
      PROTWIN_CHECK(starts[j].first >= prev_end, where, "/params/", starts[j].second, "/offset: ",
                    ch.params[starts[j].second].name, " at element ", starts[j].first, " overlaps ", prev.name,
                    " (elements ", prev.offset, " to ", prev_end, ")");
    }
    PROTWIN_CHECK(used * 4 <= ch.bytes.n, where, "/bytes: ", ch.bytes.n, " bytes cannot hold ", used,
                  " fp32 elements");
    rp.chunks.chunk_numel.push_back(used);
  }
  // Where each chunk lives and where its step runs: its own fields (traces/plan_placement.h).
  for (const traces::ChunkPlacement& c : traces::chunk_placement(plan, source)) {
    rp.chunks.device_resident.push_back(c.resident);
    rp.chunks.device_optimizer.push_back(c.device_optimizer);
  }
  for (size_t i = 0; i < specs.size(); ++i)
    PROTWIN_CHECK(rp.chunks.slots[i].chunk >= 0, source, ":/chunks: parameter ", specs[i].name,
                  " of the runtime's model is in no chunk");
  // Device optimizer states sharded over the ranks, as the plan's ops say (traces/chunk_sharding.h).
  rp.chunks.device_sharded = traces::device_sharded_chunks(plan);
  traces::check_sharded_chunks_gathered(plan, source);

  // Ops the runtime can replay.
  std::string collective_stream;
  for (const traces::Op& op : plan.ops) {
    const std::string k = traces::to_string(op.kind);
    if (k == "forward" || k == "backward" || k == "recompute") {
      PROTWIN_CHECK(op.block >= 0 && op.block <= rp.model.layers + 1, traces::describe_op(plan, op), ": block ",
                    op.block, " is not a block of the model (0..", rp.model.layers + 1, ")");
    } else if (k == "h2d" || k == "d2h") {
      const std::string what = traces::to_string(op.sub_kind);
      const bool ok = k == "h2d" ? (what == "param_chunk" || what == "activation" || what == "updated_params" ||
                                    what == "grad_roundtrip")
                                 : (what == "activation" || what == "grad_chunk" || what == "partial_grad_chunk" ||
                                    what == "grad_fp32");
      PROTWIN_CHECK(ok, traces::describe_op(plan, op), ": sub-kind \"", what, "\" is not a ", k, " the runtime replays");
      if (what == "activation")
        PROTWIN_CHECK(op.block >= 1 && op.block <= rp.model.layers &&
                          rp.layer_modes[static_cast<size_t>(op.block - 1)] == LayerMode::kSwap,
                      traces::describe_op(plan, op), ": activation copy of block ", op.block, ", which is not a swap layer");
      else
        PROTWIN_CHECK(op.chunk >= 0 && op.chunk < static_cast<int>(plan.chunks.size()), traces::describe_op(plan, op),
                      ": chunk ", op.chunk, " does not exist");
      rp.offloads = true;
    } else if (k == "host_cast") {
      PROTWIN_CHECK(op.chunk >= 0 && op.chunk < static_cast<int>(plan.chunks.size()) &&
                        !rp.chunks.device_optimizer[static_cast<size_t>(op.chunk)],
                    traces::describe_op(plan, op), ": chunk ", op.chunk, " has no host gradient to cast");
    } else if (k == "host_pass") {
      const std::string what = traces::to_string(op.sub_kind);
      PROTWIN_CHECK(what == "overflow_scan" || what == "unscale" || what == "fp16_copy", traces::describe_op(plan, op),
                    ": sub-kind \"", what, "\" is not a host_pass the runtime replays");
      if (what != "overflow_scan")
        PROTWIN_CHECK(op.chunk >= 0 && op.chunk < static_cast<int>(plan.chunks.size()) &&
                          !rp.chunks.device_optimizer[static_cast<size_t>(op.chunk)],
                      traces::describe_op(plan, op), ": chunk ", op.chunk, " has no host optimizer state");
    } else if (k == "adam_cpu" || k == "adam_device") {
      PROTWIN_CHECK(op.chunk >= 0 && op.chunk < static_cast<int>(plan.chunks.size()), traces::describe_op(plan, op),
                    ": chunk ", op.chunk, " does not exist");
      const bool on_device = rp.chunks.device_optimizer[static_cast<size_t>(op.chunk)];
      PROTWIN_CHECK(on_device == (k == "adam_device"), traces::describe_op(plan, op), ": chunk ", op.chunk,
                    on_device ? " has its optimizer state on the device" : " has its optimizer state on the host");
      if (k == "adam_cpu") rp.offloads = true;
    } else if (k == "all_gather" || k == "reduce_scatter" || k == "all_reduce" || k == "broadcast") {
      PROTWIN_CHECK(op.chunk >= 0 && op.chunk < static_cast<int>(plan.chunks.size()), traces::describe_op(plan, op),
                    ": chunk ", op.chunk, " does not exist");
      // Every rank must issue its collectives in one order: the listed order of one stream.
      if (collective_stream.empty()) collective_stream = op.stream;
      PROTWIN_CHECK(op.stream == collective_stream, traces::describe_op(plan, op), ": collectives on stream \"",
                    op.stream, "\" and \"", collective_stream,
                    "\"; the runtime issues them in the listed order of one stream");
    } else {
      PROTWIN_CHECK(false, traces::describe_op(plan, op), ": the runtime cannot replay op kind \"", k, "\"");
    }
  }
  rp.validation = traces::validate(plan);  // over-capacity plans are refused here, op and pool named
  rp.plan = std::move(plan);
  return rp;
}

RuntimePlan load_runtime_plan(const std::string& path, int ranks) {
  return make_runtime_plan(traces::read_plan(path), path, ranks);
}

}  // namespace protwin::rt
