#include "sim/parallel/compiler/megatron_compiler.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "sim/engine/op_builder.h"
#include "sim/parallel/compiler/pipeline_schedule.h"
#include "sim/workload/workload.h"
#include "traces/error.h"
#include "traces/units.h"

namespace protwin::sim::parallel {

namespace {

using traces::Kernel;
using traces::Op;

// Streams of one stage, in this order; a template is priced on its role's name.
enum Role { kCompute, kTpComm, kCpComm, kDpComm, kP2p, kRoles };
constexpr const char* kRoleNames[kRoles] = {"compute", "tp_comm", "cp_comm", "dp_comm", "p2p"};

bool is_matmul(const Kernel& k) {
  return k.sig.kind == "gemm" || k.sig.kind == "attention" || k.sig.kind == "flash_attention";
}

double matmul_flops(const std::vector<Kernel>& ks) {
  double s = 0;
  for (const auto& k : ks)
    if (is_matmul(k)) s += k.flops * static_cast<double>(k.count);
  return s;
}

// Templates: every distinct op once, with its matmul flops; their kernel sets go into `plan`.
class TemplateBank {
 public:
  explicit TemplateBank(traces::Plan& plan) : plan_(plan) {}
  int compute(const std::string& kind, const std::vector<Kernel>& ks, const std::string& block,
              const std::string& part) {
    Op op = make_op::compute(plan_, traces::op_kind_named(kind), kRoleNames[kCompute], ks);
    op.attrs = {{"block", block}, {"part", part}};
    return add(std::move(op), matmul_flops(ks));
  }
  // host_sync: the host waits for the op to end before it issues anything else (.item(),
  // torch.cuda.synchronize()).
  int collective(const std::string& kind, Role role, int64_t bytes, const GroupPlacement& g,
                 const std::string& what, bool host_sync = false) {
    Op op = make_op::collective(traces::op_kind_named(kind), kRoleNames[role], bytes,
                                {static_cast<int>(g.size), static_cast<int>(g.ranks_per_node), 0, g.inter_node()},
                                host_sync);
    op.attrs = {{"group", g.name}, {"what", what}};
    return add(std::move(op), 0);
  }
  int send_recv(Role role, int64_t bytes, bool inter_node, const std::string& what, bool host_sync = false) {
    Op op = make_op::send_recv(kRoleNames[role], bytes, inter_node, host_sync);
    op.attrs = {{"what", what}};
    return add(std::move(op), 0);
  }
  // bytes_per_param 0: the machine's fused device Adam; else the framework's own step (its
  // passes counted from its code, `what` says which).
  int adam(int64_t params, double bytes_per_param = 0, const std::string& what = "") {
    Op op = make_op::adam_device(kRoleNames[kCompute], params, bytes_per_param);
    op.attrs = {{"what", what.empty() ? "optimizer step over this rank's shard" : what}};
    return add(std::move(op), 0);
  }

  std::vector<Op> ops;                 // what prices each template (typed)
  std::vector<nlohmann::json> attrs;   // its descriptive attrs (block, part, group, what)
  std::vector<double> matmul;

 private:
  int add(Op op, double mm) {
    // Collective, send and Adam templates repeat with equal contents: share them.
    const std::string key = std::string(traces::to_string(op.kind)) + "|" + op.stream + "|" +
                            std::to_string(op.host_sync) + "|" + std::to_string(op.bytes_per_param) + "|" +
                            std::to_string(op.work.bytes) + "|" +
                            std::to_string(op.work.params) + "|" + std::to_string(op.kernels) + "|" +
                            std::to_string(op.group.ranks) + "|" + std::to_string(op.group.ranks_per_node) + "|" +
                            std::to_string(op.group.inter_node) + "|" + op.attrs.dump();
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    op.id = static_cast<int>(ops.size());
    attrs.push_back(std::move(op.attrs));
    op.attrs = nullptr;
    ops.push_back(std::move(op));
    matmul.push_back(mm);
    index_.emplace(key, static_cast<int>(ops.size()) - 1);
    return static_cast<int>(ops.size()) - 1;
  }
  std::map<std::string, int> index_;
  traces::Plan& plan_;
};

// A program: the ops of one block's forward, backward or recompute, with the dependencies
// inside it. Deps index earlier steps; kPrevCompute is the last op emitted on the stage's compute
// stream before the step. An `exit` step (a reduce-scatter of dX, the returned dK/dV) is waited
// for by the next op on the compute stream, wherever that op comes from.
constexpr int kPrevCompute = -1;
struct Step {
  int tmpl = 0;
  Role role = kCompute;
  std::vector<int> deps = {};
  bool exit = false;
};
using Program = std::vector<Step>;

// A run of consecutive kernels of one section (the next run is of another section).
struct Segment {
  Section section;
  std::vector<Kernel> kernels;
  std::vector<bool> weight_grad;
};

std::vector<Segment> segments(const std::vector<Kernel>& ks, const std::vector<KernelTag>& tags) {
  PROTWIN_ASSERT(ks.size() == tags.size(), "kernels and tags differ in length");
  std::vector<Segment> out;
  for (size_t i = 0; i < ks.size(); ++i) {
    if (out.empty() || out.back().section != tags[i].section) out.push_back({tags[i].section, {}, {}});
    out.back().kernels.push_back(ks[i]);
    out.back().weight_grad.push_back(tags[i].weight_grad);
  }
  return out;
}

// Builds the programs of one block from its kernels and section tags.
class ProgramBuilder {
 public:
  // act_bytes: a gathered activation (tokens x h); kv_bytes: one rank's K and V block.
  ProgramBuilder(TemplateBank& bank, const Placement& pl, int64_t act_bytes, int64_t kv_bytes,
                 int64_t loss_stat_bytes, bool sequence_parallel)
      : bank_(bank), pl_(pl), act_bytes_(act_bytes), kv_bytes_(kv_bytes), loss_bytes_(loss_stat_bytes),
        sp_(sequence_parallel) {}

  // kind "forward" or "recompute".
  Program forward(const Block& b, const std::string& kind) {
    Program p;
    const bool tp = pl_.sizes.tp > 1;
    std::vector<Kernel> pending;
    for (const Segment& seg : segments(b.forward, b.forward_tags)) {
      const Section sec = seg.section;
      if (tp && sp_ && sec == Section::kColumn) {
        flush(p, pending, kind, b, "before all-gather");
        p.push_back({tp_coll("all_gather", kCompute, act_bytes_, "sequence-parallel input")});
      }
      if (sec == Section::kAttention && pl_.sizes.cp > 1) {
        flush(p, pending, kind, b, "attention input");
        ring(p, seg.kernels, kind, b, false);
      } else {
        pending.insert(pending.end(), seg.kernels.begin(), seg.kernels.end());
      }
      if (tp && (sec == Section::kRow || sec == Section::kEmbedding)) {
        flush(p, pending, kind, b, section_name(sec));
        // Without sequence parallelism: reduce_from_tensor_model_parallel_region, an all-reduce.
        p.push_back({sp_ ? tp_coll("reduce_scatter", kCompute, act_bytes_, "sequence-parallel output")
                         : tp_coll("all_reduce", kCompute, act_bytes_, "row-parallel output")});
      }
      if (tp && sec == Section::kLoss) {
        flush(p, pending, kind, b, "loss");
        p.push_back({tp_coll("all_reduce", kCompute, loss_bytes_, "vocab-parallel loss statistics")});
      }
    }
    flush(p, pending, kind, b, "tail");
    return p;
  }

  // The backward; with `selective`, the attention core's forward runs again just before its
  // backward.
  Program backward(const Block& b, bool selective) {
    Program p;
    const bool tp = pl_.sizes.tp > 1, cp = pl_.sizes.cp > 1;
    std::vector<Kernel> pending;
    for (const Segment& seg : segments(b.backward, b.backward_tags)) {
      const Section sec = seg.section;
      if (tp && sp_ && (sec == Section::kRow || sec == Section::kEmbedding)) {
        flush(p, pending, "backward", b, "before all-gather");
        p.push_back({tp_coll("all_gather", kCompute, act_bytes_, "output gradient")});
      }
      if (sec == Section::kAttention && selective) {
        flush(p, pending, "backward", b, "before recompute");
        std::vector<Kernel> fwd;
        for (size_t i = 0; i < b.forward.size(); ++i)
          if (b.forward_tags[i].section == Section::kAttention) fwd.push_back(b.forward[i]);
        if (cp) ring(p, fwd, "recompute", b, false);
        else p.push_back({bank_.compute("recompute", fwd, b.name, "attention")});
      }
      if (sec == Section::kAttention && cp) {
        flush(p, pending, "backward", b, "attention output gradient");
        ring(p, seg.kernels, "backward", b, true);
        continue;
      }
      if (tp && !sp_ && sec == Section::kColumn) {
        // Without sequence parallelism (Megatron-LM 2021 and Megatron-DeepSpeed, mpu/layers.py
        // ColumnParallelLinear.forward: copy_to_tensor_model_parallel_region): autograd runs the
        // linear's dX and dW, then the copy's backward all-reduces dX, synchronously.
        pending.insert(pending.end(), seg.kernels.begin(), seg.kernels.end());
        flush(p, pending, "backward", b, "column");
        p.push_back({tp_coll("all_reduce", kCompute, act_bytes_, "input gradient")});
        continue;
      }
      if (tp && sec == Section::kColumn) {
        // Megatron's LinearWithGradAccumulationAndAsyncCommunication: all-gather the input
        // (async) while dX runs, then reduce-scatter dX (async) while dW runs.
        flush(p, pending, "backward", b, "before column");
        std::vector<Kernel> dx, dw;
        for (size_t i = 0; i < seg.kernels.size(); ++i) (seg.weight_grad[i] ? dw : dx).push_back(seg.kernels[i]);
        const int ag = static_cast<int>(p.size());
        p.push_back({tp_coll("all_gather", kTpComm, act_bytes_, "input for the weight gradient"), kTpComm,
                     {kPrevCompute}});
        const int x = static_cast<int>(p.size());
        p.push_back({bank_.compute("backward", dx, b.name, "column dX")});
        if (!dw.empty()) p.push_back({bank_.compute("backward", dw, b.name, "column dW"), kCompute, {ag}});
        p.push_back({tp_coll("reduce_scatter", kTpComm, act_bytes_, "input gradient"), kTpComm, {x}, true});
        continue;
      }
      pending.insert(pending.end(), seg.kernels.begin(), seg.kernels.end());
    }
    flush(p, pending, "backward", b, "tail");
    return p;
  }

 private:
  void flush(Program& p, std::vector<Kernel>& ks, const std::string& kind, const Block& b,
             const std::string& part) {
    if (ks.empty()) return;
    p.push_back({bank_.compute(kind, ks, b.name, part)});
    ks.clear();
  }

  int tp_coll(const std::string& kind, Role role, int64_t bytes, const std::string& what) {
    return bank_.collective(kind, role, bytes, pl_.tp, what);
  }

  // The CP ring over one attention segment: cp steps of its kernels (each run once of the
  // segment's count cp) and cp-1 K/V exchanges, double buffered: exchange j (passing on the
  // block received last, receiving the next) waits for exchange j-1 and for step j-1 to free the
  // buffer; step j waits for exchange j-1. Backward also carries dK/dV along (2x bytes) and
  // finally returns dK/dV to its owner.
  void ring(Program& p, const std::vector<Kernel>& ks, const std::string& kind, const Block& b,
            bool backward) {
    const int64_t c = pl_.sizes.cp;
    std::vector<Kernel> step = ks;
    for (auto& k : step) {
      PROTWIN_ASSERT(k.count == c, "attention kernel count ", k.count, " != CP ", c);
      k.count = 1;
    }
    const bool inter = pl_.cp.inter_node();
    const int64_t bytes = backward ? 2 * kv_bytes_ : kv_bytes_;
    const int attn_tmpl = bank_.compute(kind, step, b.name, "attention ring step");
    const int sr_tmpl = bank_.send_recv(kCpComm, bytes, inter, backward ? "cp ring K/V and dK/dV" : "cp ring K/V");
    int prev_sr = -1, prev_attn = -1;
    for (int64_t j = 0; j < c; ++j) {
      int sr = -1;
      if (j + 1 < c) {
        sr = static_cast<int>(p.size());
        p.push_back({sr_tmpl, kCpComm, j == 0 ? std::vector<int>{kPrevCompute} : std::vector<int>{prev_sr, prev_attn}});
      }
      prev_attn = static_cast<int>(p.size());
      p.push_back({attn_tmpl, kCompute, prev_sr >= 0 ? std::vector<int>{prev_sr} : std::vector<int>{}});
      prev_sr = sr;
    }
    if (backward)
      p.push_back({bank_.send_recv(kCpComm, kv_bytes_, inter, "cp ring dK/dV home"), kCpComm, {prev_attn}, true});
  }

  TemplateBank& bank_;
  const Placement& pl_;
  int64_t act_bytes_, kv_bytes_, loss_bytes_;
  bool sp_;
};

// A unit of a virtual stage: the embedding, one decoder layer or the head.
struct Unit {
  BlockKind kind;
  int block;         // 0 embedding, 1 + layer, L + 1 head
  int64_t params;    // this rank's
  int bucket = -1;   // gradient bucket (index into the chunk's buckets)
  bool bucket_end = false;  // the bucket is complete after this unit's backward
};

// FSDP's root unit: a chunk's units that are not decoder layers (embedding, head), one flat parameter.
int64_t fsdp_root_params(const std::vector<Unit>& units) {
  int64_t n = 0;
  for (const Unit& u : units) n += u.kind == BlockKind::kDecoder ? 0 : u.params;
  return n;
}

struct Bucket {
  int64_t params = 0;
  int gather_op = -1;  // overlap_param_gather: the all-gather before its first forward
};

struct Chunk {
  std::vector<Unit> units;      // forward order
  std::vector<Bucket> buckets;  // backward order
};

struct StageState {
  std::string streams[kRoles];
  int last_compute = -1;
  int last_dp = -1;
  std::vector<int> pending;  // waited for by the next op on the compute stream
  std::vector<Chunk> chunks;
  // FSDP (one stage, one chunk; its forward and backward tasks alternate per micro-batch): the
  // current micro-batch's units' last compute ops in forward and backward, their gathers for the
  // backward (-1: not yet issued), the root unit's gather.
  std::vector<int> fsdp_fwd_done, fsdp_bwd_done, fsdp_gathered;
  int fsdp_root_gather = -1;
};

// Emits ops with consecutive ids from set_next_id() on into `out` (the ops built and not yet
// handed to the run). Without `out` it only counts: ids advance and the stage's ids and flops
// are tracked, but no op is built (the stream's skeleton, which numbers the plan).
class Emitter {
 public:
  Emitter(std::deque<Op>* out, const TemplateBank& bank, bool describe) : out_(out), bank_(bank), describe_(describe) {}

  bool counting() const { return out_ == nullptr; }
  int next_id() const { return next_id_; }
  void set_next_id(int id) { next_id_ = id; }

  int emit(StageState& st, StageInfo& info, int tmpl, Role role, std::vector<int> deps, int block) {
    const Op& t = bank_.ops[static_cast<size_t>(tmpl)];
    if (out_) {
      // The template is what prices the op (typed); its descriptive attrs are kept apart (a 4D run
      // builds millions of ops), only plan files take them.
      Op op = t;
      op.id = next_id_;
      op.stream = st.streams[role];
      op.block = block;
      if (role == kCompute) deps.insert(deps.end(), st.pending.begin(), st.pending.end());
      normalise_deps(deps);
      op.deps = std::move(deps);
      if (describe_) op.attrs = bank_.attrs[static_cast<size_t>(tmpl)];
      out_->push_back(std::move(op));
    } else if (role == kCompute) {  // the stage's flops, counted once (by the skeleton)
      (t.kind == traces::OpKind::kRecompute ? info.recompute_matmul_flops : info.matmul_flops) += bank_.matmul[static_cast<size_t>(tmpl)];
    }
    const int id = next_id_++;
    if (role == kCompute) {
      st.pending.clear();
      st.last_compute = id;
    }
    if (role == kDpComm) st.last_dp = id;
    return id;
  }

  void run(StageState& st, StageInfo& info, const Program& prog, int block) {
    ids_.clear();
    for (const Step& s : prog) {
      std::vector<int> deps;
      if (out_)
        for (int d : s.deps) deps.push_back(d == kPrevCompute ? st.last_compute : ids_[static_cast<size_t>(d)]);
      const int id = emit(st, info, s.tmpl, s.role, std::move(deps), block);
      ids_.push_back(id);
      if (s.exit) st.pending.push_back(id);
    }
  }

 private:
  std::deque<Op>* out_;
  int next_id_ = 0;
  const TemplateBank& bank_;
  bool describe_;
  std::vector<int> ids_;
};

}  // namespace

double model_flops_per_token(const ModelSpec& model, int64_t seq, const std::string& dtype) {
  WorkloadOptions o;
  o.batch = 1;
  o.seq = seq;
  o.dtype = dtype;
  o.fused_projections = true;
  const Workload w = build_workload(model, o);
  double fwd = 0;
  for (const auto& b : w.blocks) fwd += matmul_flops(b.forward);
  return 3 * fwd / static_cast<double>(w.tokens);
}

void check_fsdp_layout(const MegatronOptions& o) {
  const ParallelSizes& z = o.sizes;
  PROTWIN_CHECK(!o.fsdp || (z.tp == 1 && z.pp == 1 && z.cp == 1), "--framework fsdp: FSDP FULL_SHARD shards over ",
                "data parallelism only (--tp, --pp and --cp 1), got TP ", z.tp, " PP ", z.pp, " CP ", z.cp);
}

int64_t fsdp_predivide_factor(int64_t world) {
  int64_t f = 1;
  while (world % f == 0 && world / f > f) f *= 2;
  return f;
}

FsdpPassBytes fsdp_pass_bytes(int64_t params, int64_t world, int param_bytes, int reduce_bytes, bool accumulate) {
  const double p = static_cast<double>(params), shard = static_cast<double>(ceil_div(params, world));
  const int64_t pre = fsdp_predivide_factor(world);
  const double post = static_cast<double>(world) / static_cast<double>(pre);
  FsdpPassBytes b;
  if (param_bytes != 4) b.shard_cast = (4.0 + param_bytes) * shard;
  b.post_backward = 2.0 * param_bytes * p;  // the flat gradient: autograd's cat of the views' gradients
  if (param_bytes != reduce_bytes) b.post_backward += (param_bytes + reduce_bytes) * p;
  if (pre > 1) b.post_backward += 2.0 * reduce_bytes * p;
  if (post > 1) b.post_backward += 2.0 * reduce_bytes * shard;
  if (reduce_bytes != 4) b.post_backward += (reduce_bytes + 4.0) * shard;
  if (accumulate) b.post_backward += 3.0 * 4.0 * shard;
  return b;
}

void apply_framework_preset(MegatronOptions& o, const std::string& framework) {
  if (framework == "megatron-core") return;
  if (framework == "fsdp") {
    // torch FSDP FULL_SHARD under composer (llm-foundry's MPT benchmarks, commit 061f2c7c): MPT
    // has no dropout (resid/emb/attn_pdrop 0) and no TP, so only the data-parallel side changes.
    // Gradients reduce in fp32: composer's mixed_precision DEFAULT (get_mixed_precision:
    // param_dtype = the autocast dtype, reduce_dtype fp32), the MP mode of the A100-80GB and H100
    // tables; PURE reduces in the compute dtype (--grad-reduce-dtype).
    o.fsdp = true;
    o.fsdp_passes = true;
    o.framework_step = true;
    o.grad_bytes = 4;
    return;
  }
  PROTWIN_CHECK(framework == "megatron-lm" || framework == "megatron-deepspeed",
                "--framework: expected megatron-core, megatron-lm, megatron-deepspeed or fsdp, got '", framework, "'");
  // Both code bases (Megatron-LM at examples/sc21's commit 6985e58, microsoft/Megatron-DeepSpeed):
  // - no sequence parallelism (it came with Korthikanti et al. 2022); mpu/layers.py
  //   ColumnParallelLinear / RowParallelLinear all-reduce (mappings.py _CopyToModelParallelRegion,
  //   _ReduceFromModelParallelRegion);
  // - arguments.py: --hidden-dropout 0.1 and --attention-dropout 0.1 by default; transformer.py
  //   ParallelTransformerLayer fuses bias, dropout and residual add (bias_dropout_add_fused_train);
  // - gradients reduced in their own dtype: fp16 runs keep fp16 grads (examples/sc21/CONFIG.sh
  //   passes --fp16 without --accumulate-allreduce-grads-in-fp32; DeepSpeed's fp16 engine
  //   all-reduces the fp16 grads); bf16 forces fp32 accumulation and reduction;
  // - mpu/cross_entropy.py _VocabParallelCrossEntropy on logits.float();
  // - tokenizer.py _vocab_size_with_padding (--make-vocab-size-divisible-by 128, times TP).
  o.sequence_parallel = false;
  o.dropout = true;
  o.grad_bytes = o.dtype == "fp16" ? 2 : 4;
  o.vocab_parallel_loss = true;
  o.pad_vocab = true;
  // - the bias passes (WorkloadOptions::bias_passes): microsoft/Megatron-DeepSpeed (1de4f54,
  //   megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication)
  //   adds the bias after its matmul (output = output + bias) and reduces grad_output.sum(dim=0)
  //   for it; Megatron-LM SC'21, see below.
  o.bias_passes = true;
  if (framework != "megatron-lm") return;
  // Megatron-LM at 6985e58 only (Megatron-DeepSpeed pipelines through DeepSpeed's engine):
  // - p2p_communication.py _communicate: --scatter-gather-tensors-in-pipeline is on by default
  //   (split_tensor_into_1d_equal_chunks before the send, gather_split_1d_tensor after), and
  //   batch_isend_irecv + req.wait() is followed by torch.cuda.synchronize() unconditionally;
  // - optimizer/optimizer.py Float16OptimizerWithFloat16Params.step with --fp16 (CONFIG.sh,
  //   --loss-scale 8192: a ConstantGradScaler still unscales and checks): _copy_model_grads_to_main_grads,
  //   _unscale_main_grads_and_check_for_nan (all_reduce of found_inf over the model-parallel
  //   group, found_inf.item()), clip_grad_norm_fp32 (--clip-grad 1.0: multi_tensor_l2norm,
  //   all_reduce over the model-parallel group, total_norm.item()), then Adam and
  //   _copy_main_params_to_model_params.
  // - model/distributed.py LocalDDP (--DDP-impl local, run_table_1.sh's larger rows) all-reduces
  //   after the backward (what --no-overlap-grad-reduce says) and its hook adds every gradient
  //   into main_grad; torch DDP (the smaller rows) overlaps and accumulates in autograd.
  // - examples/sc21/SRUN.sh runs nvcr.io/nvidia/pytorch:20.12-py3 (PyTorch 1.8): F.linear on the
  //   3-D [s, b, h] input is matmul + output.add_(bias) (addmm only for 2-D input), so the QKV
  //   projection (mpu/layers.py ColumnParallelLinear, skip_bias_add off) adds its bias in a pass
  //   of its own; every bias gradient (also of the skip_bias_add layers, whose bias enters
  //   bias_gelu / bias_dropout_add) is autograd's reduction of dY over the tokens.
  o.p2p_scatter_gather = true;
  o.p2p_sync = true;
  o.framework_step = o.dtype != "fp32";
  o.local_ddp = !o.overlap_grad_reduce;
}

namespace {

// The compiler's state between two ops. Two emissions of the same code run side by side:
//  - the skeleton numbers the plan: it emits the tasks in compile order (the order that makes
//    ids topological: a stage goes on while the sends it waits for exist) but builds no op, only
//    counting ids; for each task it records the first id and the id of the send it takes, for the
//    tail the first ids of its pieces and the ids they take from other stages;
//  - the builder builds the ops of one stage's task at a time, with the skeleton's ids. Streamed
//    (a simulation takes the ops), each stage builds its own tasks as the run needs them (one
//    task ahead of the task running, or the host thread's next op), so the ops held follow each
//    stage's in-flight work, never the other stages' position in the compile order. A send (or a
//    tail op) that another stage has not built yet is a dependency the run waits for by id
//    (generated() is false until it is handed out). In id order (compile_megatron_plan), the
//    builder builds each task as the skeleton emits it, which hands the ops out in id order.
class StreamImpl final : public MegatronOpStream {
 public:
  StreamImpl(const ModelSpec& unpadded, const MegatronOptions& options, const Placement& pl,
             const nlohmann::json& meta, bool id_order);
  const traces::Plan& header() const override { return out.plan; }
  const ParallelPlan& plan() const override { return out; }
  const traces::Op* next() override;
  void starting(int id, int stream) override;
  void release(int id, int stream) override;
  bool more_for_host(const std::string& host) override;
  bool generated(int id) const override { return promised_.empty() || promised_.count(id) == 0; }
  bool wants_more() const override { return ops_.size() > (handed_ ? 1u : 0u) || unmet_ > 0; }

  ParallelPlan out;
  TemplateBank bank{out.plan};

 private:
  // A pipeline task (index into its stage's schedule) or, for the parameter gathers before the
  // first task and the tail's pieces, these marks.
  static constexpr int64_t kGatherTask = -1;
  static constexpr int64_t kTailTask = std::numeric_limits<int64_t>::max();
  struct Track {
    std::vector<StageState> st;
    Emitter em;
  };
  // What the skeleton found for a task the builder has not built yet.
  struct TaskIds {
    int first = -1;  // its first op's id
    int send = -1;   // the send from the neighbouring stage it waits for (-1: none)
  };
  // Ops a stage built and the run has not released yet: ids [first, end) of one task.
  struct Span {
    int first, end;
    int64_t task;
    int unreleased;
  };

  void emit_gathers(Track& tr);
  void emit_task(Track& tr, int s, const PipeTask& t, TaskIds& ids);
  void emit_fsdp_task(Track& tr, StageState& S, StageInfo& info, Chunk& c, bool forward, int64_t microbatch);
  // The tail per stage: gradients not reduced during backward; the tied embedding's all-reduce
  // (stage 0); the step (and the gathers after it). Compile order: every stage's grads, the tied
  // all-reduce, every stage's step.
  void emit_tail_grads(Track& tr, int s);
  void emit_tied(Track& tr);
  void emit_step(Track& tr, int s);
  // The skeleton's next task (or its tail); false when it has emitted everything.
  bool skeleton_step();
  // The builder's next piece: a stage's task or tail (or, in id order, the skeleton's next);
  // false when every op is built.
  bool build_more();
  void build_task(int s);
  void build_tail(int s);
  void build_tail_in_id_order();
  // One piece of stage s's tail (its emit), built with the ids the skeleton gave it from `first` on.
  template <class Emit>
  void build_tail_piece(int s, int first, Emit emit) {
    builder_.em.set_next_id(first);
    emit();
    add_span(s, first, kTailTask);
  }
  // `id`, emitted by stage `s`'s skeleton, as a dependency of an op being built: promised to the
  // run unless that stage has built it.
  int dep_on(int s, int id) {
    if (id >= 0 && id > prog(s).last_built) promised_.insert(id);
    return id;
  }
  void add_span(int s, int first, int64_t task);
  Span* find_span(int s, int id);
  // Stage s must have built `tasks` tasks (all of them and its tail, when that is more).
  void need(int s, int64_t tasks);
  bool unmet(int s) const {
    const Progress& g = prog_[static_cast<size_t>(s)];
    return g.built < g.need || (g.tail_needed && !g.tail_built);
  }
  void update_unmet(int s, bool before) { unmet_ += static_cast<int>(unmet(s)) - static_cast<int>(before); }

  MegatronOptions& o_;
  const bool id_order_;
  ModelSpec model_;
  int p_ = 1, v_ = 1, n_vstages_ = 1;
  int64_t m_ = 1, tasks_per_stage_ = 0;
  int64_t dpc_ = 1;
  bool tied_ = false, dp_ops_ = false;
  int e_ = 2;
  Program emb_fwd_, emb_bwd_, head_fwd_, head_bwd_, layer_fwd_, layer_re_, layer_bwd_;
  std::deque<Op> ops_;  // built and not yet read by the run (the front was handed last when handed_)
  bool handed_ = false;
  Track skel_, builder_;

  // Per stage: where the skeleton and the builder are.
  struct Progress {
    int64_t skel_next = 0;                       // the skeleton's next task
    std::deque<TaskIds> planned;                 // what it found for the builder, in task order
    int tail_grads_first = -1, tail_step_first = -1;
    int64_t built = 0, need = 0;                 // tasks the builder built, and must have built
    bool tail_built = false, tail_needed = false;
    int last_built = -1;                         // the last id the builder built
    std::deque<Span> spans;
  };
  std::vector<Progress> prog_;
  Progress& prog(int s) { return prog_[static_cast<size_t>(s)]; }

  // Skeleton: where its emission loop is, the sends emitted and not yet waited for
  // ((virtual stage, micro-batch) -> op id).
  int cur_ = 0;
  bool progress_ = false, skel_done_ = false;
  std::unordered_map<int64_t, int> sent_fwd_, sent_bwd_;
  int64_t send_key(int vs, int64_t mb) const { return static_cast<int64_t>(vs) * m_ + mb; }
  std::deque<std::pair<int, int64_t>> skel_order_;            // id order: (stage, task) as emitted
  int tied_first_ = -1, tied_last_stage_dep_ = -1;

  // Builder.
  int unmet_ = 0;                   // stages with unmet(s)
  std::vector<int> stage_of_stream_;
  std::unordered_map<std::string, int> stage_of_host_;
  std::unordered_set<int> promised_;  // ids built ops wait for that are not built yet

  int grad_tmpl(int64_t params) {
    return bank.collective(o_.distributed_optimizer ? "reduce_scatter" : "all_reduce", kDpComm,
                           params * o_.grad_bytes, out.placement.dp_cp, "gradient bucket");
  }
  int param_tmpl(int64_t params) {
    return bank.collective("all_gather", kDpComm, params * e_, out.placement.dp_cp, "parameter bucket");
  }
  // Scatter-gather: each TP rank sends its 1/TP slice (p2p_bytes_); the receiver all-gathers it
  // over TP (p2p_gather_, -1 without).
  int64_t p2p_bytes_ = 0;
  int p2p_gather_ = -1;
  int p2p_tmpl(int link, bool forward) {
    return bank.send_recv(kP2p, p2p_bytes_, out.placement.stage_link_inter_node[static_cast<size_t>(link)],
                          forward ? "activation to the next stage" : "activation gradient to the previous stage",
                          o_.p2p_sync);
  }
  // Megatron's LocalDDP hook adds each parameter's gradient into its main_grad buffer after
  // every backward: read both, write main_grad, in the reduction dtype.
  Kernel grad_accumulation(const Unit& u) const {
    return make_op::elementwise_kernel(u.params, o_.grad_bytes == 2 ? o_.dtype : "fp32", static_cast<double>(u.params),
                                       3.0 * static_cast<double>(o_.grad_bytes) * static_cast<double>(u.params));
  }
  int grad_accumulation_tmpl(const Unit& u) {
    return bank.compute("backward", {grad_accumulation(u)}, "unit." + std::to_string(u.block), "main_grad accumulation");
  }
  // FSDP: a unit's parameters gathered in the compute dtype, its gradient reduce-scattered.
  int fsdp_gather_tmpl(int64_t params) {
    return bank.collective("all_gather", kDpComm, params * e_, out.placement.dp_cp, "FSDP unit parameters");
  }
  int fsdp_reduce_tmpl(int64_t params) {
    return bank.collective("reduce_scatter", kDpComm, params * o_.grad_bytes, out.placement.dp_cp,
                           "FSDP unit gradient");
  }
  // FSDP's own elementwise passes on a unit of `params` (fsdp_pass_bytes). They run on FSDP's
  // unshard and post-backward streams beside the compute; they are charged to the compute
  // stream because GEMMs leave no SM idle, so a concurrent memory-bound kernel takes its own
  // duration from them (the reduce-scatter waits for the post-backward passes, as on its stream).
  Kernel fsdp_pass_kernel(int64_t elements, double bytes, int dtype_bytes) const {
    return make_op::elementwise_kernel(elements, dtype_bytes == 4 ? "fp32" : o_.dtype, static_cast<double>(elements), bytes);
  }
  int fsdp_pass_tmpl(const char* kind, int64_t elements, double bytes, int dtype_bytes, int block, const char* part) {
    return bank.compute(kind, {fsdp_pass_kernel(elements, bytes, dtype_bytes)}, "unit." + std::to_string(block), part);
  }
  // The passes' kernel sets of a unit of `params` (shard cast; post-backward, first and later
  // micro-batches), listed before the first op as a streamed plan file's header needs them.
  void add_fsdp_pass_sets(int64_t params) {
    if (const double b = fsdp_bytes(params, false).shard_cast; b > 0)
      out.plan.add_kernel_set({fsdp_pass_kernel(ceil_div(params, dpc_), b, 4)});
    for (bool accumulate : {false, true})
      if (const double b = fsdp_bytes(params, accumulate).post_backward; b > 0)
        out.plan.add_kernel_set({fsdp_pass_kernel(params, b, o_.grad_bytes)});
  }
  // The shard cast before a gather of `params`, where FSDP runs in mixed precision.
  void emit_fsdp_shard_cast(Emitter& em, StageState& S, StageInfo& info, int64_t params, int block, bool forward) {
    const double b = fsdp_bytes(params, false).shard_cast;
    if (!o_.fsdp_passes || b <= 0) return;
    em.emit(S, info,
            fsdp_pass_tmpl(forward ? "forward" : "backward", ceil_div(params, dpc_), b, 4, block,
                           "FSDP low-precision shard cast"),
            kCompute, {}, block);
  }
  FsdpPassBytes fsdp_bytes(int64_t params, bool accumulate) const {
    return fsdp_pass_bytes(params, dpc_, static_cast<int>(e_), o_.grad_bytes, accumulate);
  }
  const Program& fwd_of(const Unit& u) const {
    return u.kind == BlockKind::kEmbedding ? emb_fwd_ : u.kind == BlockKind::kHead ? head_fwd_ : layer_fwd_;
  }
  const Program& bwd_of(const Unit& u) const {
    return u.kind == BlockKind::kEmbedding ? emb_bwd_ : u.kind == BlockKind::kHead ? head_bwd_ : layer_bwd_;
  }
};

StreamImpl::StreamImpl(const ModelSpec& unpadded, const MegatronOptions& options, const Placement& pl,
                       const nlohmann::json& meta, bool id_order)
    : o_(out.options),
      id_order_(id_order),
      skel_{{}, Emitter(nullptr, bank, false)},
      builder_{{}, Emitter(&ops_, bank, options.describe_ops)} {
  out.options = options;
  MegatronOptions& o = out.options;
  if (o.seq == 0) o.seq = unpadded.default_seq;
  const ParallelSizes& z = o.sizes;
  PROTWIN_ASSERT(pl.sizes.tp == z.tp && pl.sizes.cp == z.cp && pl.sizes.pp == z.pp && pl.sizes.dp == z.dp,
                 "placement of other sizes");
  out.placement = pl;
  const int p = static_cast<int>(z.pp), v = o.vpp;
  PROTWIN_CHECK(o.mbs >= 1, "--mbs ", o.mbs, ": must be at least 1");
  PROTWIN_CHECK(v >= 1, "--vpp ", v, ": must be at least 1");
  PROTWIN_CHECK(v == 1 || p > 1, "--vpp ", v, ": the interleaved schedule needs --pp > 1");
  PROTWIN_CHECK(o.gbs >= 1 && o.gbs % (o.mbs * z.dp) == 0, "--gbs ", o.gbs,
                ": global batch is not a positive multiple of MBS*DP ", o.mbs * z.dp);
  PROTWIN_CHECK(v == 1 || !o.split.uneven(), "--vpp ", v, ": uneven first/last stages need the non-interleaved ",
                "schedule (--vpp 1)");
  PROTWIN_CHECK(o.split.uneven() || unpadded.layers % (static_cast<int64_t>(p) * v) == 0, "--vpp ", v, ": layers ",
                unpadded.layers, " are not divisible by PP*VPP ", static_cast<int64_t>(p) * v);
  check_fsdp_layout(o);
  const int64_t m = o.gbs / (o.mbs * z.dp);
  out.microbatches = m;
  // Model flops count the real vocabulary (the published formulas' V); the kernels the padded one.
  out.model_flops_per_token = model_flops_per_token(unpadded, o.seq, o.dtype);
  ModelSpec model = unpadded;
  if (o.pad_vocab) model.vocab = padded_vocab(unpadded.vocab, 128, z.tp);
  const int n_vstages = p * v;
  // First layer of each virtual stage (and L at the end): L / (p v) each, or the uneven split.
  const std::vector<int64_t> per_stage =
      o.split.uneven() ? stage_layers(model.layers, p, o.split)
                       : std::vector<int64_t>(static_cast<size_t>(n_vstages), model.layers / n_vstages);
  std::vector<int64_t> vstage_begin(static_cast<size_t>(n_vstages) + 1, 0);
  std::partial_sum(per_stage.begin(), per_stage.end(), vstage_begin.begin() + 1);

  WorkloadOptions wo;
  wo.batch = o.mbs;
  wo.seq = o.seq;
  wo.dtype = o.dtype;
  wo.flash_attention = o.flash_attention;
  wo.tp = z.tp;
  wo.cp = z.cp;
  wo.fused_projections = true;
  wo.sequence_parallel = o.sequence_parallel;
  wo.dropout = o.dropout;
  wo.fused_bias_dropout_add = o.dropout;
  wo.vocab_parallel_loss = o.vocab_parallel_loss;
  wo.bias_passes = o.bias_passes;
  const Workload w = build_workload(model, wo);
  const int e = traces::dtype_bytes(o.dtype);
  const Block& emb = w.blocks.front();
  const Block& layer = w.layer(0);
  const Block& head = w.blocks.back();

  traces::Plan& plan = out.plan;
  plan.meta = meta.is_object() ? meta : nlohmann::json::object();
  plan.meta["generator"] = "protwin megatron compiler";
  plan.meta["model"] = model.name;
  plan.gpus = static_cast<int>(z.world());
  plan.nodes = static_cast<int>(pl.nodes);
  plan.dtype = o.dtype;
  plan.meta["tp"] = z.tp;
  plan.meta["cp"] = z.cp;
  plan.meta["pp"] = z.pp;
  plan.meta["dp"] = z.dp;
  plan.meta["vpp"] = v;
  plan.meta["mbs"] = o.mbs;
  plan.meta["gbs"] = o.gbs;
  plan.meta["seq"] = o.seq;
  plan.meta["microbatches"] = m;
  plan.meta["recompute"] = recompute_name(o.recompute);
  plan.meta["rank_classes"] = "one rank per pipeline stage";
  if (o.split.uneven()) plan.meta["stage_layers"] = {{"first", o.split.first}, {"last", o.split.last}};

  const int64_t act_bytes = static_cast<int64_t>(e) * w.tokens * model.hidden;
  const int64_t kv_bytes = 2 * static_cast<int64_t>(e) * w.tokens * (model.kv_dim() / z.tp);
  ProgramBuilder pb(bank, pl, act_bytes, kv_bytes, 3 * 4 * w.tokens, o.sequence_parallel);
  emb_fwd_ = pb.forward(emb, "forward"), emb_bwd_ = pb.backward(emb, false);
  head_fwd_ = pb.forward(head, "forward"), head_bwd_ = pb.backward(head, false);
  layer_fwd_ = pb.forward(layer, "forward");
  layer_re_ = o.recompute == Recompute::kFull ? pb.forward(layer, "recompute") : Program{};
  layer_bwd_ = pb.backward(layer, o.recompute == Recompute::kSelective);

  // Streams and units.
  const int64_t dpc = z.dp * z.cp;
  const bool tied = model.tied_embeddings && p > 1;
  const bool dp_ops = dpc > 1;
  std::vector<StageState>& st = skel_.st;
  st.resize(static_cast<size_t>(p));
  out.stages.assign(static_cast<size_t>(p), StageInfo{});
  const int64_t bucket_min = o.bucket_params > 0 ? o.bucket_params : std::max<int64_t>(40000000, 1000000 * dpc);
  const int64_t head_params =
      ceil_div(head.param_count + (tied ? model.vocab * model.hidden : 0), z.tp);
  for (int s = 0; s < p; ++s) {
    auto& S = st[static_cast<size_t>(s)];
    auto& info = out.stages[static_cast<size_t>(s)];
    const bool used[kRoles] = {true, z.tp > 1, z.cp > 1, dp_ops || tied || o.fsdp, p > 1};  // in the plan
    for (int r = 0; r < kRoles; ++r) {
      S.streams[r] = "stage" + std::to_string(s) + "." + kRoleNames[r];
      if (!used[r]) continue;
      plan.streams.push_back({S.streams[r], {}});
      stage_of_stream_.push_back(s);
    }
    info.compute_stream = S.streams[kCompute];
    stage_of_host_[traces::host_of_stream(S.streams[kCompute])] = s;
    S.chunks.resize(static_cast<size_t>(v));
    for (int k = 0; k < v; ++k) {
      const int vs = k * p + s;
      Chunk& c = S.chunks[static_cast<size_t>(k)];
      if (vs == 0) c.units.push_back({BlockKind::kEmbedding, 0, ceil_div(emb.param_count, z.tp)});
      for (int64_t i = vstage_begin[static_cast<size_t>(vs)]; i < vstage_begin[static_cast<size_t>(vs) + 1]; ++i)
        c.units.push_back({BlockKind::kDecoder, static_cast<int>(i + 1), ceil_div(layer.param_count, z.tp)});
      if (vs == n_vstages - 1)
        c.units.push_back({BlockKind::kHead, static_cast<int>(model.layers + 1), head_params});
      // Buckets in backward order, each at least bucket_min parameters (the last may be less).
      for (auto it = c.units.rbegin(); it != c.units.rend(); ++it) {
        if (c.buckets.empty() || c.buckets.back().params >= bucket_min) c.buckets.push_back({});
        c.buckets.back().params += it->params;
        it->bucket = static_cast<int>(c.buckets.size()) - 1;
        info.params += it->params;
      }
      for (auto& u : c.units) info.layers += u.kind == BlockKind::kDecoder ? 1 : 0;
      for (size_t i = 0; i < c.units.size(); ++i)
        c.units[i].bucket_end = i == 0 || c.units[i - 1].bucket != c.units[i].bucket;
      // Every kernel set is in the header before the first op (a plan file's frame lists them).
      if (o.local_ddp)
        for (const auto& u : c.units) plan.add_kernel_set({grad_accumulation(u)});
    }
  }

  // Scatter-gather's template right after the units, where compile_megatron_plan made it before
  // the stream (template ids unchanged).
  const bool scatter_gather = o.p2p_scatter_gather && z.tp > 1;
  p2p_bytes_ = scatter_gather ? ceil_div(layer.input_bytes, z.tp) : layer.input_bytes;
  p2p_gather_ =
      scatter_gather ? bank.collective("all_gather", kCompute, layer.input_bytes, pl.tp, "scatter-gather: received slices")
                     : -1;

  // The plan's length: per chunk and micro-batch its units' programs and two sends (FSDP: the
  // gathers and reduce-scatters; LocalDDP: the main_grad passes), plus buckets and the tail.
  size_t expected = 0;
  for (const auto& S : st)
    for (const auto& c : S.chunks) {
      size_t per_mb = 2;
      for (const auto& u : c.units)
        per_mb += fwd_of(u).size() + bwd_of(u).size() + (u.kind == BlockKind::kDecoder ? layer_re_.size() : 0);
      if (o.fsdp || o.local_ddp) per_mb += 3 * c.units.size() + 2;
      if (o.fsdp_passes) per_mb += 3 * c.units.size() + 2;  // the shard casts and post-backward passes
      expected += per_mb * static_cast<size_t>(m) + 3 * c.buckets.size() + 6;
    }
  PROTWIN_CHECK(expected <= static_cast<size_t>(kMaxPlanOps), "--gbs ", o.gbs, ": ", m,
                " micro-batches (GBS/(MBS*DP)) make a plan of about ", expected, " ops, more than the ",
                kMaxPlanOps, " protwin simulates\nhint: raise --mbs or lower --gbs");
  // Interleaved: m must be a multiple of p (pipeline_task relies on it).
  PROTWIN_CHECK(v == 1 || m % p == 0, "--vpp ", v, ": the interleaved schedule needs the micro-batches (", m,
                ") to be a multiple of PP ", p);

  p_ = p, v_ = v, n_vstages_ = n_vstages, m_ = m, tasks_per_stage_ = 2 * m * v;
  dpc_ = dpc, tied_ = tied, dp_ops_ = dp_ops, e_ = e;
  if (o.fsdp_passes)
    for (const auto& S : st)
      for (const auto& c : S.chunks) {
        for (const auto& u : c.units)
          if (u.kind == BlockKind::kDecoder) add_fsdp_pass_sets(u.params);
        if (const int64_t root = fsdp_root_params(c.units); root > 0) add_fsdp_pass_sets(root);
      }
  model_ = model;
  builder_.st = skel_.st;
  prog_.resize(static_cast<size_t>(p));
  // The parameter gathers come first in both: the builder's go to the run before it starts.
  emit_gathers(skel_);
  emit_gathers(builder_);
  // Before the run: every stage's first task (the ops without a predecessor of their own stage
  // wait for the gathers and the previous stage's sends).
  if (!id_order_)
    for (int s = 0; s < p; ++s) need(s, 1);
}

void StreamImpl::need(int s, int64_t tasks) {
  Progress& g = prog(s);
  const bool before = unmet(s);
  if (tasks >= tasks_per_stage_) {
    g.tail_needed = true;
    tasks = tasks_per_stage_;
  }
  g.need = std::max(g.need, tasks);
  update_unmet(s, before);
}

void StreamImpl::add_span(int s, int first, int64_t task) {
  const int end = builder_.em.next_id();
  if (end == first) return;
  if (!id_order_) prog(s).spans.push_back({first, end, task, end - first});
  prog(s).last_built = end - 1;
}

StreamImpl::Span* StreamImpl::find_span(int s, int id) {
  auto& spans = prog(s).spans;
  for (auto it = spans.rbegin(); it != spans.rend(); ++it)
    if (it->first <= id && id < it->end) return &*it;
  PROTWIN_ASSERT(false, "op ", id, " of stage ", s, " is not among the ops the stream handed out");
  return nullptr;
}

void StreamImpl::starting(int id, int stream) {
  const int s = stage_of_stream_[static_cast<size_t>(stream)];
  const Span* span = find_span(s, id);
  // Its task's successor must exist before this task's last compute op ends.
  if (span->task != kGatherTask && span->task != kTailTask) need(s, span->task + 2);
}

void StreamImpl::release(int id, int stream) {
  const int s = stage_of_stream_[static_cast<size_t>(stream)];
  --find_span(s, id)->unreleased;
  auto& spans = prog(s).spans;
  while (!spans.empty() && spans.front().unreleased == 0) spans.pop_front();
}

bool StreamImpl::more_for_host(const std::string& host) {
  auto it = stage_of_host_.find(host);
  PROTWIN_ASSERT(it != stage_of_host_.end(), "no stage has host ", host);
  const int s = it->second;
  Progress& g = prog(s);
  if (g.tail_built) return false;
  need(s, g.built + 1);
  return true;
}

const traces::Op* StreamImpl::next() {
  if (handed_) {  // the run has read the op handed last
    ops_.pop_front();
    handed_ = false;
  }
  while (ops_.empty()) {
    if (!build_more()) return nullptr;
  }
  handed_ = true;
  if (!promised_.empty()) promised_.erase(ops_.front().id);
  return &ops_.front();
}

bool StreamImpl::build_more() {
  if (id_order_) {
    if (skel_order_.empty() && !skeleton_step()) return false;
    if (skel_order_.empty()) return true;  // the skeleton emitted the tail: built in id order
    const int s = skel_order_.front().first;
    skel_order_.pop_front();
    build_task(s);
    return true;
  }
  // A stage the run waits for first; else (the run asks for ops it did not announce: it ends, or
  // the source broke its contract) the first stage with anything left.
  int pick = -1;
  for (int s = 0; s < p_ && pick < 0; ++s)
    if (unmet(s)) pick = s;
  for (int s = 0; s < p_ && pick < 0 && unmet_ == 0; ++s)
    if (!prog(s).tail_built) pick = s;
  if (pick < 0) return false;
  const bool before = unmet(pick);
  if (prog(pick).built < tasks_per_stage_) build_task(pick);
  else build_tail(pick);
  update_unmet(pick, before);
  return true;
}

// The skeleton emits the next task in compile order (a stage goes on while the sends it waits for
// exist; sweeps over the stages until one makes no progress), then the tail.
bool StreamImpl::skeleton_step() {
  if (skel_done_) return false;
  for (;;) {
    const int s = cur_;
    int64_t& i = prog(s).skel_next;
    if (i < tasks_per_stage_) {
      const PipeTask t = pipeline_task(s, p_, v_, m_, i);
      const int vs = t.chunk * p_ + s;
      const bool ready = t.forward ? vs == 0 || sent_fwd_.count(send_key(vs - 1, t.microbatch))
                                   : vs + 1 == n_vstages_ || sent_bwd_.count(send_key(vs + 1, t.microbatch));
      if (ready) {
        TaskIds ids;
        ids.first = skel_.em.next_id();
        emit_task(skel_, s, t, ids);
        prog(s).planned.push_back(ids);
        if (id_order_) skel_order_.push_back({s, i});
        ++i;
        progress_ = true;
        return true;
      }
    }
    if (++cur_ < p_) continue;
    cur_ = 0;
    if (progress_) {
      progress_ = false;
      continue;
    }
    break;
  }
  for (int s = 0; s < p_; ++s)
    PROTWIN_ASSERT(prog(s).skel_next == tasks_per_stage_, "pipeline schedule of stage ", s, " deadlocks");
  for (int s = 0; s < p_; ++s) {
    prog(s).tail_grads_first = skel_.em.next_id();
    emit_tail_grads(skel_, s);
  }
  if (tied_) {
    tied_first_ = skel_.em.next_id();
    tied_last_stage_dep_ = skel_.st.back().last_compute;
    emit_tied(skel_);
  }
  for (int s = 0; s < p_; ++s) {
    prog(s).tail_step_first = skel_.em.next_id();
    emit_step(skel_, s);
  }
  skel_done_ = true;
  if (id_order_) build_tail_in_id_order();
  return true;
}

void StreamImpl::build_task(int s) {
  Progress& g = prog(s);
  while (g.planned.empty()) PROTWIN_ASSERT(skeleton_step(), "stage ", s, ": the skeleton has no task left for it");
  TaskIds ids = g.planned.front();
  g.planned.pop_front();
  const int64_t task = g.built;
  builder_.em.set_next_id(ids.first);
  emit_task(builder_, s, pipeline_task(s, p_, v_, m_, task), ids);
  add_span(s, ids.first, task);
  ++g.built;
}

void StreamImpl::build_tail(int s) {
  while (!skel_done_) skeleton_step();
  Progress& g = prog(s);
  build_tail_piece(s, g.tail_grads_first, [&] { emit_tail_grads(builder_, s); });
  if (tied_ && s == 0) build_tail_piece(s, tied_first_, [&] { emit_tied(builder_); });
  build_tail_piece(s, g.tail_step_first, [&] { emit_step(builder_, s); });
  g.tail_built = true;
}

void StreamImpl::build_tail_in_id_order() {
  for (int s = 0; s < p_; ++s)
    build_tail_piece(s, prog(s).tail_grads_first, [&] { emit_tail_grads(builder_, s); });
  if (tied_) build_tail_piece(0, tied_first_, [&] { emit_tied(builder_); });
  for (int s = 0; s < p_; ++s) {
    build_tail_piece(s, prog(s).tail_step_first, [&] { emit_step(builder_, s); });
    prog(s).tail_built = true;
  }
}

// Distributed optimizer with overlapped gathers: every bucket's all-gather is issued at the
// start, in forward order; a bucket's first forward waits for it.
void StreamImpl::emit_gathers(Track& tr) {
  if (!(dp_ops_ && o_.distributed_optimizer && o_.overlap_param_gather && !o_.fsdp)) return;
  for (int s = 0; s < p_; ++s) {
    auto& S = tr.st[static_cast<size_t>(s)];
    const int first = tr.em.next_id();
    for (auto& c : S.chunks)
      for (auto it = c.buckets.rbegin(); it != c.buckets.rend(); ++it)
        it->gather_op = tr.em.emit(S, out.stages[static_cast<size_t>(s)], param_tmpl(it->params), kDpComm, {}, -1);
    if (!tr.em.counting()) add_span(s, first, kGatherTask);
  }
}

void StreamImpl::emit_task(Track& tr, int s, const PipeTask& t, TaskIds& ids) {
  Emitter& em = tr.em;
  auto& S = tr.st[static_cast<size_t>(s)];
  auto& info = out.stages[static_cast<size_t>(s)];
  Chunk& c = S.chunks[static_cast<size_t>(t.chunk)];
  const int vs = t.chunk * p_ + s;
  // The send this task waits for is waited for by this task only: the skeleton finds it among
  // the sends emitted, the builder has its id from the skeleton (the neighbour may not have built
  // it yet). Scatter-gather then all-gathers the received slices.
  auto take = [&](std::unordered_map<int64_t, int>& sent, int from) {
    if (em.counting()) {
      auto it = sent.find(send_key(from, t.microbatch));
      ids.send = it->second;
      sent.erase(it);
    } else {
      dep_on(from % p_, ids.send);
    }
    S.pending.push_back(ids.send);
    if (p2p_gather_ >= 0) em.emit(S, info, p2p_gather_, kCompute, {}, -1);
  };
  // The send this task emits over the link to stage `link`, for the skeleton's tasks that wait for it.
  auto put = [&](std::unordered_map<int64_t, int>& sent, int link, bool forward) {
    std::vector<int> deps = S.pending;
    deps.push_back(S.last_compute);
    const int id = em.emit(S, info, p2p_tmpl(link, forward), kP2p, deps, -1);
    if (em.counting()) sent[send_key(vs, t.microbatch)] = id;
  };
  if (o_.fsdp) {
    emit_fsdp_task(tr, S, info, c, t.forward, t.microbatch);
    return;
  }
  if (t.forward) {
    if (vs > 0) take(sent_fwd_, vs - 1);
    for (const Unit& u : c.units) {
      if (t.microbatch == 0 && c.buckets[static_cast<size_t>(u.bucket)].gather_op >= 0)
        S.pending.push_back(c.buckets[static_cast<size_t>(u.bucket)].gather_op);
      em.run(S, info, fwd_of(u), u.block);
    }
    if (vs + 1 < n_vstages_) put(sent_fwd_, s, true);
    return;
  }
  if (vs + 1 < n_vstages_) take(sent_bwd_, vs + 1);
  const bool last_mb = t.microbatch == m_ - 1;
  for (auto it = c.units.rbegin(); it != c.units.rend(); ++it) {
    if (it->kind == BlockKind::kDecoder && o_.recompute == Recompute::kFull) em.run(S, info, layer_re_, it->block);
    em.run(S, info, bwd_of(*it), it->block);
    if (o_.local_ddp) em.emit(S, info, grad_accumulation_tmpl(*it), kCompute, {}, it->block);
    if (dp_ops_ && o_.overlap_grad_reduce && last_mb && it->bucket_end && !o_.fsdp)
      em.emit(S, info, grad_tmpl(c.buckets[static_cast<size_t>(it->bucket)].params), kDpComm, {S.last_compute}, -1);
  }
  if (vs > 0) put(sent_bwd_, (s + p_ - 1) % p_, false);
}

// FSDP FULL_SHARD, one micro-batch's forward or backward (one stage, one chunk). Sources
// (torch 2.0/2.1 torch/distributed/fsdp/_runtime_utils.py, as composer 0.16 wraps MPT, one unit
// per MPTBlock): _pre_forward unshards a unit (the all-gather on the unshard stream, issued as
// the host reaches it), _post_forward reshards it except the root; limit_all_gathers makes the
// host wait for the unit freed two gathers earlier; backward_prefetch BACKWARD_POST (composer's
// default) issues the next unit's gather in the post-backward hook, before the reduce-scatter of
// this unit's gradient; composer's ddp_sync_context is a no-op for FSDP, so every micro-batch
// reduce-scatters. One dp_comm stream carries gathers and reduce-scatters in issue order (they
// share the NVLinks). Streamed, every op depends on ops of its own task except the last layer's
// backward gather, which waits for the forward task's last compute op (the stage's last compute
// op of the task before, as the OpSource contract allows).
void StreamImpl::emit_fsdp_task(Track& tr, StageState& S, StageInfo& info, Chunk& c, bool forward,
                                int64_t microbatch) {
  Emitter& em = tr.em;
  const std::vector<Unit>& u = c.units;
  const size_t n = u.size();
  const auto is_layer = [&](size_t i) { return i < n && u[i].kind == BlockKind::kDecoder; };
  const int64_t root_params = fsdp_root_params(u);
  if (forward) {
    S.fsdp_fwd_done.assign(n, -1);
    S.fsdp_gathered.assign(n, -1);
    emit_fsdp_shard_cast(em, S, info, root_params, u.front().block, true);
    S.fsdp_root_gather = em.emit(S, info, fsdp_gather_tmpl(root_params), kDpComm, {}, -1);
    for (size_t i = 0; i < n; ++i) {
      if (is_layer(i)) {
        emit_fsdp_shard_cast(em, S, info, u[i].params, u[i].block, true);
        std::vector<int> deps;
        if (i >= 2 && is_layer(i - 2)) deps.push_back(S.fsdp_fwd_done[i - 2]);  // limit_all_gathers
        S.pending.push_back(em.emit(S, info, fsdp_gather_tmpl(u[i].params), kDpComm, deps, -1));
      } else {
        S.pending.push_back(S.fsdp_root_gather);
      }
      em.run(S, info, fwd_of(u[i]), u[i].block);
      S.fsdp_fwd_done[i] = S.last_compute;
    }
    return;
  }
  S.fsdp_bwd_done.assign(n, -1);
  // The post-backward passes, then the reduce-scatter waiting for them (post-backward stream order).
  const auto reduce = [&](int64_t params, int block) {
    const double b = fsdp_bytes(params, microbatch > 0).post_backward;
    if (o_.fsdp_passes && b > 0)
      em.emit(S, info,
              fsdp_pass_tmpl("backward", params, b, o_.grad_bytes, block, "FSDP post-backward gradient passes"),
              kCompute, {}, block);
    em.emit(S, info, fsdp_reduce_tmpl(params), kDpComm, {S.last_compute}, -1);
  };
  for (size_t r = n; r-- > 0;) {
    if (is_layer(r)) {
      emit_fsdp_shard_cast(em, S, info, u[r].params, u[r].block, false);
      // The last layer's gather is issued by its pre-backward hook, once the forward is done.
      if (S.fsdp_gathered[r] < 0)
        S.fsdp_gathered[r] = em.emit(S, info, fsdp_gather_tmpl(u[r].params), kDpComm, {S.fsdp_fwd_done.back()}, -1);
      S.pending.push_back(S.fsdp_gathered[r]);
      if (o_.recompute == Recompute::kFull) em.run(S, info, layer_re_, u[r].block);
    }
    em.run(S, info, bwd_of(u[r]), u[r].block);
    S.fsdp_bwd_done[r] = S.last_compute;
    if (!is_layer(r)) continue;
    if (r >= 1 && is_layer(r - 1)) {  // BACKWARD_POST prefetch, rate-limited by the unit two back
      std::vector<int> deps;
      if (is_layer(r + 1)) deps.push_back(S.fsdp_bwd_done[r + 1]);
      S.fsdp_gathered[r - 1] = em.emit(S, info, fsdp_gather_tmpl(u[r - 1].params), kDpComm, deps, -1);
    }
    reduce(u[r].params, u[r].block);
  }
  reduce(root_params, u.front().block);  // the root's post-backward
}

// Tail, stage s: the gradient buckets not reduced during backward.
void StreamImpl::emit_tail_grads(Track& tr, int s) {
  auto& S = tr.st[static_cast<size_t>(s)];
  if (!dp_ops_ || o_.overlap_grad_reduce || o_.fsdp) return;
  for (auto& c : S.chunks)
    for (auto& b : c.buckets)
      tr.em.emit(S, out.stages[static_cast<size_t>(s)], grad_tmpl(b.params), kDpComm, {S.last_compute}, -1);
}

// Tail: Megatron all-reduces the word-embedding gradient between the first and the last stage
// (an op of stage 0 that waits for the last stage's last compute op).
void StreamImpl::emit_tied(Track& tr) {
  const Placement& pl = out.placement;
  auto& S0 = tr.st.front();
  const bool inter = pl.stage_link_inter_node.back();
  const GroupPlacement g{"embedding", 2, inter ? 1 : 2, inter ? 2 : 1};  // name, size, ranks per node, nodes
  const int tmpl = bank.collective("all_reduce", kDpComm, ceil_div(model_.vocab, o_.sizes.tp) * model_.hidden * o_.grad_bytes,
                                   g, "tied embedding gradient");
  const int last = tr.em.counting() ? tr.st.back().last_compute : dep_on(p_ - 1, tied_last_stage_dep_);
  tr.em.emit(S0, out.stages.front(), tmpl, kDpComm, {S0.last_compute, last}, -1);
}

// Tail, stage s: the step (after the tied all-reduce on the first and last stage) and the
// parameter gathers after it.
void StreamImpl::emit_step(Track& tr, int s) {
  auto& S = tr.st[static_cast<size_t>(s)];
  auto& info = out.stages[static_cast<size_t>(s)];
  std::vector<int> deps = {S.last_dp};
  if (tied_ && (s == 0 || s == p_ - 1)) deps.push_back(tr.em.counting() ? tied_first_ : dep_on(0, tied_first_));
  // The step's own passes and syncs, where the framework's code is known (apply_framework_preset),
  // in bytes per parameter (0: the machine's fused device Adam):
  // - Megatron-LM: Adam 28 (fp32 p, g, m, v read; p, m, v written), the fp16/bf16 grads copied to
  //   fp32 main grads 6 (0 when they are already fp32), unscale with the inf check 8 (fp16 only),
  //   the l2 norm 4, the main params copied back to the model's fp16/bf16 params 6;
  // - composer's DecoupledAdamW (composer/optim/decoupled_weight_decay.py adamw(), a per-tensor
  //   loop of unfused ops; MPT yamls: weight_decay 0, so no param.mul_): exp_avg mul_ 8 + add_ 12,
  //   exp_avg_sq mul_ 8 + addcmul_ 12, sqrt 8, div 8, add_ eps 8, param addcdiv_ 16 = 80; plus
  //   gradient clipping (llm-foundry yamls: clipping_type norm; FSDP clip_grad_norm_: the local norm
  //   4, the unconditional grad mul_ 8) = 92.
  double step_bpp = 0;
  std::string step_what;
  if (o_.framework_step && !o_.fsdp) {
    const bool fp16 = o_.dtype == "fp16";
    step_bpp = 28 + (o_.grad_bytes == 4 ? 0 : 6) + (fp16 ? 8 : 0) + 4 + 6;
    step_what = "Megatron Float16Optimizer step: main grads, unscale, grad norm, Adam, params copied back";
    // found_inf (fp16 only) and the grad norm: each all-reduced over Megatron's model-parallel
    // group (TP x PP) and read by .item(), so the host waits for it.
    const int64_t mp_nodes = std::max<int64_t>(1, out.placement.tp.nodes * out.placement.pp.nodes);
    const int64_t mp_size = o_.sizes.tp * o_.sizes.pp;
    const GroupPlacement mp{"mp", mp_size, std::max<int64_t>(1, mp_size / mp_nodes), mp_nodes};
    for (int k = fp16 ? 0 : 1; k < 2; ++k)
      deps = {tr.em.emit(S, info,
                         bank.collective("all_reduce", kCompute, 4, mp, k == 0 ? "found_inf" : "grad norm", true),
                         kCompute, deps, -1)};
  } else if (o_.framework_step) {
    step_bpp = 80 + 12;
    step_what = "composer DecoupledAdamW (unfused) after FSDP clip_grad_norm_";
    if (dp_ops_)
      deps = {tr.em.emit(S, info, bank.collective("all_reduce", kCompute, 4, out.placement.dp_cp, "FSDP grad norm"),
                         kCompute, deps, -1)};
  }
  const int64_t shard = o_.distributed_optimizer || o_.fsdp ? ceil_div(info.params, dpc_) : info.params;
  const int adam = tr.em.emit(S, info, bank.adam(shard, step_bpp, step_what), kCompute, deps, -1);
  if (dp_ops_ && o_.distributed_optimizer && !o_.overlap_param_gather && !o_.fsdp)
    for (auto& c : S.chunks)
      for (auto it = c.buckets.rbegin(); it != c.buckets.rend(); ++it)
        tr.em.emit(S, info, param_tmpl(it->params), kDpComm, {adam}, -1);
}

}  // namespace

std::unique_ptr<MegatronOpStream> megatron_op_stream(const ModelSpec& model, const MegatronOptions& options,
                                                     const Placement& placement, const nlohmann::json& meta,
                                                     bool id_order) {
  return std::make_unique<StreamImpl>(model, options, placement, meta, id_order);
}

ParallelPlan compile_megatron_plan(const ModelSpec& model, const MegatronOptions& options, const Placement& placement,
                                   const nlohmann::json& meta) {
  StreamImpl stream(model, options, placement, meta, true);
  std::vector<traces::Op> ops;
  while (const traces::Op* op = stream.next()) ops.push_back(*op);
  ParallelPlan out = stream.plan();
  out.plan.ops = std::move(ops);
  return out;
}

}  // namespace protwin::sim::parallel
