// Mirrors runtime/executor/plan_replayer.cpp op by op; the comments name the runtime function
// whose tensors each case makes or drops.
#include "sim/offload/analytic/runtime_memory.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/workload/model_spec.h"
#include "sim/workload/runtime_tensors.h"
#include "traces/block_allocator.h"
#include "traces/chunk_sharding.h"
#include "traces/plan_placement.h"
#include "traces/error.h"

namespace protwin::sim::offload {
namespace {

using Block = traces::BlockAllocator::Block;

// A step of the replay at one time: allocate (bytes > 0) or free a tensor of the global namespace.
struct Step {
  int64_t t = 0;
  int phase = 0;  // 0 = an op's end, 1 = an op's start, 2 = the end of an op that took no time
  int op = 0;
  size_t seq = 0;
  int tensor = 0;
  int64_t bytes = 0;
};

class Replay {
 public:
  Replay(const traces::Plan& plan, const traces::Report& schedule);
  RuntimeMemory run();

 private:
  // ---- events of the op being translated ----
  int alloc(int64_t bytes) {
    const int id = next_++;
    emit(id, bytes);
    return id;
  }
  void free(int id) {
    if (id >= 0) emit(id, 0);
  }
  void emit(int tensor, int64_t bytes) {
    // An op of no duration ends after its own start (phase 2), others' ends come first (phase 0).
    const int end_phase = end_ > start_ ? 0 : 2;
    steps_.push_back({at_end_ ? end_ : start_, at_end_ ? end_phase : 1, op_, steps_.size(), tensor, bytes});
  }
  // Runs a program: its events up to its peak at the op's start, the rest at its end. Returns the
  // global ids of its local tensors.
  std::vector<int> run_program(const TensorProgram& p);
  void translate(const traces::Op& op);
  void bind_grads(int block);  // ChunkStore::block_views(with_grads): zeroed gradient chunks

  const traces::Plan& plan_;
  const traces::Report& schedule_;
  RuntimeShapes shapes_;
  int ranks_ = 1;
  int layers_ = 0;
  std::vector<traces::LayerKeep> keeps_;  // per decoder layer
  std::vector<int64_t> numel_;
  std::vector<bool> resident_, device_optimizer_;
  std::vector<std::set<int>> block_chunks_;
  std::map<int, int> buffer_tensor_chunk_;  // plan tensor id of "chunkN.buffer" -> N
  TensorProgram emb_fwd_, layer_fwd_, head_fwd_, head_bwd_, layer_bwd_, emb_bwd_;

  // Runtime state (global tensor ids; -1 = none).
  int x_ = -1, dx_ = -1, loss_ = -1;
  std::vector<std::vector<int>> acts_;  // device tensors of each layer, the input first
  std::vector<bool> swapped_;
  std::vector<int> head_acts_;
  std::vector<std::deque<int>> buffers_;
  std::vector<int> grad_, scratch_;

  std::vector<Step> steps_;
  int next_ = 0, op_ = 0;
  int64_t start_ = 0, end_ = 0;
  bool at_end_ = false;
};

int64_t int_meta(const traces::Plan& plan, const char* key) {
  PROTWIN_CHECK(plan.meta.contains(key) && plan.meta[key].is_number_integer(), plan.source, ":/meta/", key,
                ": the runtime memory model needs it (an integer)");
  return plan.meta[key].get<int64_t>();
}

Replay::Replay(const traces::Plan& plan, const traces::Report& schedule) : plan_(plan), schedule_(schedule) {
  const nlohmann::json& meta = plan.meta;
  PROTWIN_CHECK(meta.contains("model_spec"), plan.source, ":/meta/model_spec: missing (the runtime memory model "
                                                          "needs the model's shapes)");
  shapes_.model = model_from_json(meta["model_spec"], plan.source, "/meta/model_spec");
  shapes_.batch = int_meta(plan, "batch");
  shapes_.seq = int_meta(plan, "seq");
  PROTWIN_CHECK(plan.gpus >= 1, plan.source, ":/meta/gpus: missing (the runtime memory model needs the ranks)");
  ranks_ = plan.gpus;
  PROTWIN_CHECK(plan.dtype == "fp32", plan.source,
                ":/meta/dtype: the runtime memory model follows the runtime, which replays fp32 plans");
  layers_ = static_cast<int>(shapes_.model.layers);
  // What the runtime reads from the plan's ops and chunks (traces/plan_placement.h), not its meta.
  keeps_ = traces::layer_keeps(plan, layers_);
  const std::vector<traces::ChunkPlacement> placement = traces::chunk_placement(plan, plan.source);

  // Chunks as runtime_plan.cpp lays them out: used elements, residency, optimizer place.
  std::map<std::string, int> chunk_of;
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    int64_t used = 0;
    for (const traces::ChunkParam& p : plan.chunks[c].params) {
      int64_t n = 1;
      for (int64_t d : p.shape) n *= d;
      used = std::max(used, p.offset + n);
      chunk_of[p.name] = static_cast<int>(c);
    }
    numel_.push_back(used);
    resident_.push_back(placement[c].resident);
    device_optimizer_.push_back(placement[c].device_optimizer);
  }
  const std::vector<BlockParams> blocks = parameter_layout(shapes_.model);
  for (const BlockParams& b : blocks) {
    std::set<int> cs;
    for (const ParamTensor& t : b.tensors) {
      auto it = chunk_of.find(t.tied_to.empty() ? t.name : t.tied_to);
      PROTWIN_CHECK(it != chunk_of.end(), plan.source, ":/chunks: parameter ", t.name, " is in no chunk");
      cs.insert(it->second);
    }
    block_chunks_.push_back(cs);
  }
  for (const traces::TensorSpec& t : plan.tensors) {
    int c = -1;
    char tail = 0;
    if (t.kind == traces::TensorKind::kBuffer && std::sscanf(t.name.c_str(), "chunk%d.buffe%c", &c, &tail) == 2 &&
        tail == 'r')
      buffer_tensor_chunk_[t.id] = c;
  }
  emb_fwd_ = embedding_forward_tensors(shapes_);
  layer_fwd_ = layer_forward_tensors(shapes_);
  head_fwd_ = head_forward_tensors(shapes_);
  head_bwd_ = head_backward_tensors(shapes_);
  layer_bwd_ = layer_backward_tensors(shapes_);
  emb_bwd_ = embedding_backward_tensors(shapes_);
}

std::vector<int> Replay::run_program(const TensorProgram& p) {
  std::vector<int> global;
  const int64_t start = start_;
  const size_t n = p.events.size();
  for (size_t i = 0; i < n; ++i) {
    // The op's kernels spread evenly over its duration: event i of n at start + (i+1)/(n+1).
    start_ = start + static_cast<int64_t>(static_cast<double>(end_ - start) * static_cast<double>(i + 1) /
                                          static_cast<double>(n + 1));
    const TensorEvent& e = p.events[i];
    if (static_cast<size_t>(e.tensor) >= global.size()) global.resize(static_cast<size_t>(e.tensor) + 1, -1);
    if (e.bytes > 0) global[static_cast<size_t>(e.tensor)] = alloc(e.bytes);
    else free(global[static_cast<size_t>(e.tensor)]);
  }
  start_ = start;
  at_end_ = true;  // what the caller does after the program happens at the op's end
  return global;
}

void Replay::bind_grads(int block) {
  for (int c : block_chunks_.at(static_cast<size_t>(block)))
    if (grad_[static_cast<size_t>(c)] == -1) grad_[static_cast<size_t>(c)] = alloc(4 * numel_[static_cast<size_t>(c)]);
}

void Replay::translate(const traces::Op& op) {
  using traces::OpKind;
  using traces::OpSubKind;
  const int blk = op.block, head = layers_ + 1;
  const size_t c = static_cast<size_t>(std::max(op.chunk, 0));
  const OpSubKind what = op.sub_kind;
  auto pick = [](const std::vector<int>& g, const std::vector<int>& local) {
    std::vector<int> out;
    for (int i : local) out.push_back(g[static_cast<size_t>(i)]);
    return out;
  };
  at_end_ = false;
  if (op.kind == OpKind::kForward || op.kind == OpKind::kRecompute) {
    if (blk == 0) {
      x_ = run_program(emb_fwd_)[static_cast<size_t>(emb_fwd_.output)];
    } else if (blk == head) {
      const std::vector<int> g = run_program(head_fwd_);
      head_acts_ = pick(g, head_fwd_.kept);
      head_acts_.push_back(x_);  // HeadActs::input
      x_ = -1;
      free(loss_);  // the previous loss_ handle (none within a step)
      loss_ = g[static_cast<size_t>(head_fwd_.output)];
    } else {
      const size_t l = static_cast<size_t>(blk - 1);
      const std::vector<int> g = run_program(layer_fwd_);
      std::vector<int> saved = pick(g, layer_fwd_.kept);
      const int y = g[static_cast<size_t>(layer_fwd_.output)];
      if (op.kind == OpKind::kRecompute) {  // layer_forward(a.input, &a): the output is dropped
        saved.insert(saved.begin(), acts_[l].at(0));
        acts_[l] = saved;
        free(y);
      } else {
        saved.insert(saved.begin(), x_);
        acts_[l] = saved;
        x_ = y;
        if (keeps_[l] == traces::LayerKeep::kInput) {  // ActivationStore::keep_input_only
          for (size_t i = 1; i < acts_[l].size(); ++i) free(acts_[l][i]);
          acts_[l].resize(1);
        }
      }
    }
    for (const traces::MemEffect& m : op.mem) {  // ChunkStore::release_buffer
      auto it = buffer_tensor_chunk_.find(m.tensor);
      if (m.pool != "gpu" || m.delta_bytes >= 0 || it == buffer_tensor_chunk_.end()) continue;
      std::deque<int>& q = buffers_.at(static_cast<size_t>(it->second));
      PROTWIN_CHECK(!q.empty(), traces::describe_op(plan_, op), ": releases chunk ", it->second, " that is in no buffer");
      free(q.front());
      q.pop_front();
    }
  } else if (op.kind == OpKind::kBackward) {
    bind_grads(blk);  // before the kernels run
    if (blk == head) {
      const int out = run_program(head_bwd_)[static_cast<size_t>(head_bwd_.output)];
      dx_ = out;
      for (int t : head_acts_) free(t);
      head_acts_.clear();
    } else if (blk == 0) {
      run_program(emb_bwd_);
      free(dx_);
      dx_ = -1;
    } else {
      const size_t l = static_cast<size_t>(blk - 1);
      const int out = run_program(layer_bwd_)[static_cast<size_t>(layer_bwd_.output)];
      free(dx_);
      dx_ = out;
      for (int t : acts_[l]) free(t);  // ActivationStore::drop
      acts_[l].clear();
    }
  } else if (op.kind == OpKind::kH2D) {
    if (what == OpSubKind::kActivation) {  // ActivationStore::swap_in: dense device copies of every saved tensor
      const size_t l = static_cast<size_t>(blk - 1);
      acts_[l].clear();
      for (int64_t b : layer_saved_tensor_bytes(shapes_)) acts_[l].push_back(alloc(b));
    } else if (what == OpSubKind::kParamChunk) {  // ChunkStore::upload
      buffers_[c].push_back(alloc(4 * numel_[c]));
    } else if (what == OpSubKind::kGradRoundtrip) {
      scratch_[c] = alloc(4 * ((numel_[c] + ranks_ - 1) / ranks_));
    }  // updated_params: into the persistent device copy
  } else if (op.kind == OpKind::kD2H) {
    if (what == OpSubKind::kActivation) {  // ActivationStore::swap_out: views packed one at a time, then all freed
      const size_t l = static_cast<size_t>(blk - 1);
      if (const int64_t pack = swap_out_pack_bytes(shapes_)) {
        const int t = alloc(pack);
        at_end_ = true;
        free(t);
      }
      at_end_ = true;
      for (int t : acts_[l]) free(t);
      acts_[l].clear();
    } else if (what == OpSubKind::kGradFp32) {
      at_end_ = true;
      free(scratch_[c]);
      scratch_[c] = -1;
    } else if (!resident_[c]) {  // ChunkStore::offload_grad: the buffer and its gradient go
      at_end_ = true;
      PROTWIN_CHECK(!buffers_[c].empty(), traces::describe_op(plan_, op), ": offloads chunk ", c,
                    " that is in no buffer");
      free(buffers_[c].front());
      buffers_[c].pop_front();
      free(grad_[c]);
      grad_[c] = -1;
    }
  }
  // all_gather, reduce_scatter, all_reduce, broadcast: in place, their staging the communicator's
  // own (RankGroup, as NCCL's buffers); adam_device: the fused kernel allocates nothing; host ops: host memory.
}

RuntimeMemory Replay::run() {
  traces::BlockAllocator device(0, "predicted device");
  std::map<int, const Block*> live;
  auto apply = [&](int tensor, int64_t bytes) {
    if (bytes > 0) {
      live[tensor] = device.allocate(static_cast<size_t>(bytes));
    } else {
      auto it = live.find(tensor);
      PROTWIN_ASSERT(it != live.end(), "runtime memory replay: free of tensor ", tensor, " that is not live");
      device.free(it->second);
      live.erase(it);
    }
  };
  // The chunk store's constructor: persistent chunks' params and gradient, then Adam m and v.
  const size_t n = numel_.size();
  RuntimeMemory out;
  // A device-sharded chunk's m and v are rank 0's shard (traces/chunk_sharding.h).
  const std::vector<bool> sharded = traces::device_sharded_chunks(plan_);
  for (size_t c = 0; c < n; ++c) {
    const int64_t b = 4 * numel_[c], optim = sharded[c] ? 4 * ((numel_[c] + ranks_ - 1) / ranks_) : b;
    std::vector<int64_t> sizes;
    if (resident_[c]) sizes = {b, b};
    if (device_optimizer_[c]) sizes.insert(sizes.end(), {optim, optim});
    for (int64_t bytes : sizes) {
      apply(next_++, bytes);
      out.states_bytes += bytes;
    }
  }
  PROTWIN_CHECK(schedule_.ops.size() == plan_.ops.size(), plan_.source, ": the schedule has ", schedule_.ops.size(),
                " ops, the plan ", plan_.ops.size());
  for (int step = 0; step < 2; ++step) {
    x_ = dx_ = loss_ = -1;
    acts_.assign(static_cast<size_t>(layers_), {});
    head_acts_.clear();
    buffers_.assign(n, {});
    grad_.assign(n, -1);
    scratch_.assign(n, -1);
    for (size_t c = 0; c < n; ++c)
      if (resident_[c]) grad_[c] = -2;  // allocated with the states, never freed
    steps_.clear();
    const int first = next_;  // this step's tensors
    for (const traces::Op& op : plan_.ops) {
      op_ = op.id;
      start_ = schedule_.ops.at(static_cast<size_t>(op.id)).start.ns;
      end_ = schedule_.ops.at(static_cast<size_t>(op.id)).end.ns;
      translate(op);
    }
    std::sort(steps_.begin(), steps_.end(), [](const Step& a, const Step& b) {
      return std::tie(a.t, a.phase, a.op, a.seq) < std::tie(b.t, b.phase, b.op, b.seq);
    });
    device.reset_peaks();
    int64_t peak = device.allocated().current;
    int peak_op = -1;
    for (const Step& s : steps_) {
      apply(s.tensor, s.bytes);
      if (device.allocated().current > peak) {
        peak = device.allocated().current;
        peak_op = s.op;
      }
    }
    // PlanReplayer::step's end: the loss and anything a plan left on the device are dropped.
    std::vector<int> leftover;
    for (const auto& entry : live)
      if (entry.first >= first) leftover.push_back(entry.first);
    for (int t : leftover) apply(t, 0);
    out.allocated_peak_bytes = device.allocated().peak;
    out.reserved_peak_bytes = device.reserved().peak;
    out.peak_op = peak_op;
  }
  return out;
}

}  // namespace

RuntimeMemory predict_runtime_memory(const traces::Plan& plan, const traces::Report& schedule) {
  Replay r(plan, schedule);
  return r.run();
}

}  // namespace protwin::sim::offload
