// Workload: one training iteration of a ModelSpec at (batch, seq, dtype), decomposed into blocks
// (embedding, each decoder layer, final norm + LM head + loss). Per block: its parameter tensors in
// execution order, its forward / backward / recompute kernels (traces::Kernel, the signatures the
// cost model prices), its saved activations when kept (NONE) or checkpointed (CKPT), and the
// largest temporary inside its forward and backward.
//
// Conventions (all counts are documented where the kernels are built, in workload.cpp):
// - flops are model flops: a backward kernel does 2x its forward's flops (dX and dW for GEMMs).
//   Causal masking is not discounted (Megatron/PaLM MFU accounting). FlashAttention's backward
//   also recomputes QK^T (2.5x forward on the GPU); that recompute is left to the cost model's
//   flash efficiency so fused and unfused attention report the same work.
// - Tensor and context parallelism (tp, cp > 1; Megatron-LM with sequence parallelism): the
//   kernels are ONE rank's shard. With c = cp, t = tp, the rank holds b*s/c tokens; column-parallel
//   GEMMs (Q/K/V, gate/up/fc1, LM head) split N by t, row-parallel ones (attention output,
//   down/fc2) split K by t, attention keeps a/t heads and runs as c ring steps {b*a/t, s/c, s/c, d}
//   (one kernel with count c: FlashAttention only), norms, residual adds and dropout run on the
//   sequence-parallel shard of b*s/(c*t) tokens (all b*s/c tokens, replicated, without sequence
//   parallelism), the vocabulary is split into ceil(V/t) rows (the 4D compiler pads V first when
//   asked). Saved and temporary bytes follow the same shapes (the 4D estimator in
//   sim/parallel/estimator is the memory model for such layouts). The collectives between the pieces are
//   not kernels: the 4D compiler (sim/parallel) adds them at the Section boundaries below.
//   At tp = cp = 1 every kernel, byte and count is exactly the unsharded workload.
// - bytes are bytes read + written by the kernel at the compute dtype (masks 1 byte, per-row
//   statistics fp32).
// - Saved activations follow PyTorch eager / HF semantics (what autograd keeps), which is what
//   Korthikanti et al. (arXiv 2205.05198) and Fujii et al. (arXiv 2411.06465) count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/workload/model_spec.h"
#include "traces/op_signature.h"

namespace protwin::sim {

struct WorkloadOptions {
  int64_t batch = 1;           // micro-batch (per GPU)
  int64_t seq = 0;             // tokens per sequence; 0 = the model's default_seq
  std::string dtype = "fp16";  // compute dtype: "fp16" | "bf16" | "fp32"
  bool flash_attention = true;
  bool dropout = false;        // attention-probability, residual and embedding dropout
  int64_t tp = 1;              // tensor-parallel size (with sequence parallelism): this rank's shard
  int64_t cp = 1;              // context-parallel size: this rank's s/cp tokens
  bool fused_projections = false;  // one QKV GEMM and one gate+up GEMM (Megatron); otherwise LLaMA's
                                   // separate projections (HF) and the adds of their input gradients
  bool hf_eager = false;  // GPT-2 family only: HuggingFace GPT2Block's eager kernels (gelu_new as its
                          // 8 elementwise ops and what autograd keeps of them; the attention scale
                          // and causal-mask where as passes of their own before the softmax)
  // Megatron switches (workload of one TP rank; see the 4D compiler for the collectives):
  bool sequence_parallel = true;  // false (Megatron-LM 2021, Megatron-DeepSpeed): norms, residual
                                  // adds and dropout run replicated on all b*s/cp tokens
  bool vocab_parallel_loss = false;  // Megatron's _VocabParallelCrossEntropy as its passes (the
                                     // .float() cast, max, subtract, exp, sum, divide; backward
                                     // multiply and the cast back) instead of one fused kernel
  bool fused_bias_dropout_add = false;  // with dropout: Megatron's bias_dropout_add_fused_train,
                                        // dropout and residual add as one kernel
  bool bias_passes = false;  // models with biases, as Megatron-LM SC'21 (PyTorch 1.8's F.linear on
                             // 3-D input) and Megatron-DeepSpeed (its own linear function) run
                             // them: the QKV projection's matmul, then a separate bias add, and
                             // every linear's bias gradient a reduction over the tokens, not in
                             // the GEMMs
};

// Where a kernel sits as Megatron's tensor parallelism cuts a block; the 4D compiler puts the
// TP collectives at the boundaries: an all-gather of the sequence-parallel input before a
// kColumn run, a reduce-scatter of the output after a kRow or kEmbedding run (and the reverse in
// backward); attention is where the context-parallel ring runs.
enum class Section : uint8_t {
  kShard,      // sequence-parallel shard: norms, residual adds, dropout
  kColumn,     // column-parallel GEMMs and the elementwise work on their outputs (RoPE, activation)
  kAttention,  // the attention core (per head; the CP ring steps)
  kRow,        // row-parallel GEMMs: attention output projection, down/fc2
  kEmbedding,  // vocabulary-parallel lookup
  kLoss,       // vocabulary-parallel cross-entropy
};
const char* section_name(Section s);

struct KernelTag {
  Section section = Section::kShard;
  bool weight_grad = false;  // backward: the dW GEMM of a linear layer (dX GEMMs and others false)
};

enum class BlockKind { kEmbedding, kDecoder, kHead };
const char* block_kind_name(BlockKind k);

// One tensor autograd keeps between a block's forward and its backward.
struct SavedTensor {
  std::string name;        // e.g. "attn.softmax_out"
  int64_t bytes = 0;
  bool row_stats = false;  // fp32 per-row statistics (norm mean/rstd, flash logsumexp):
                           // O(tokens), left out of the published per-layer formulas
};

struct Block {
  std::string name;  // "embedding", "layer.<i>", "head"
  BlockKind kind = BlockKind::kDecoder;
  int64_t layer = -1;                 // decoder layer index, -1 otherwise
  std::vector<ParamTensor> params;    // in order of first use (tied ones flagged)
  int64_t param_count = 0;            // parameters this block owns
  std::vector<traces::Kernel> forward;
  std::vector<traces::Kernel> backward;   // in execution order (reverse of forward)
  std::vector<traces::Kernel> recompute;  // CKPT: the forward again, inside backward
  std::vector<KernelTag> forward_tags;    // one per forward kernel (recompute has the same)
  std::vector<KernelTag> backward_tags;   // one per backward kernel
  std::vector<SavedTensor> saved;     // kept for backward when the block is NONE
  int64_t saved_bytes = 0;            // sum of `saved`
  int64_t saved_tensor_bytes = 0;     // sum of `saved` without row statistics
  int64_t checkpoint_bytes = 0;       // CKPT keeps only the block input
  int64_t input_bytes = 0;            // activation entering the block
  int64_t output_bytes = 0;           // activation leaving the block
  int64_t forward_transient_bytes = 0;   // largest set of temporaries live in one forward kernel
  int64_t backward_transient_bytes = 0;  // same in backward (activation gradients; weight
                                         // gradients go to the grad chunks and are not counted)

  double forward_flops() const;
  double backward_flops() const;
};

struct Workload {
  ModelSpec model;
  WorkloadOptions options;  // seq resolved
  int64_t tokens = 0;       // batch * seq / cp: the tokens one rank processes
  std::vector<Block> blocks;

  int64_t parameter_count() const;  // sum over blocks == model.parameter_count()
  double forward_flops() const;
  double backward_flops() const;
  // Training (forward + backward) model flops per token, without recompute.
  double flops_per_token() const;
  // Saved activation bytes of one decoder layer kept whole (NONE), incl. row statistics.
  int64_t activation_bytes_per_layer() const;
  const Block& layer(int64_t i) const;
};

// Errors (bad batch/seq/dtype) are user errors naming the option ("--seq", ...).
Workload build_workload(const ModelSpec& m, const WorkloadOptions& o);

// Sum of flops * count.
double total_flops(const std::vector<traces::Kernel>& ks);
double total_bytes(const std::vector<traces::Kernel>& ks);

nlohmann::json block_to_json(const Block& b, bool with_kernels);
// {"name","params","flops_per_token","layers","activation_bytes_per_layer", ..., "blocks": [...]}
nlohmann::json workload_to_json(const Workload& w, bool with_kernels);

}  // namespace protwin::sim
