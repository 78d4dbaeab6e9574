#include "runtime/profile/block_profile.h"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

#include "runtime/memory/speed_throttle.h"
#include "runtime/model/transformer.h"
#include "runtime/profile/op_timer.h"
#include "traces/error.h"

namespace protwin::rt {

std::vector<traces::OpSignature> plan_block_signatures(const traces::Plan& plan) {
  std::vector<traces::OpSignature> v;
  for (const traces::Op& op : plan.ops)
    if (auto sig = traces::block_signature(plan, op))
      if (std::find(v.begin(), v.end(), *sig) == v.end()) v.push_back(*sig);
  return v;
}

// The one-layer model, its inputs and one forward and backward through the three blocks: every
// block's saved tensors and input gradient, as the step hands them over.
struct BlockBench::State {
  ModelSpec cfg;
  std::vector<at::Tensor> params, grads;
  ModelWeights w, g;
  at::Tensor tokens, targets, x, y, dy, dx;
  EmbeddingActs emb;
  LayerActs layer;
  HeadActs head;
};

BlockBench::BlockBench(const traces::OpSignature& sig)
    : sig_(sig), alloc_(std::make_unique<CachingAllocator>(0, "block")), s_(std::make_unique<State>()) {
  const std::optional<traces::BlockShape> b = traces::block_shape_of(sig);
  PROTWIN_CHECK(b.has_value(), "profile: ", sig.key(), ": not a block signature");
  PROTWIN_CHECK(sig.dtype == "fp32", "profile: ", sig.key(), ": the emulated device runs fp32 only");
  // One decoder layer of the signature's shapes, the family's defaults for the rest (GPT-2: as
  // many learned positions as the sequence).
  nlohmann::json spec = {{"family", b->family}, {"hidden", b->hidden}, {"layers", 1},
                         {"heads", b->heads},   {"kv_heads", b->kv_heads}, {"ffn_hidden", b->ffn_hidden},
                         {"vocab", b->vocab}};
  if (b->family == "gpt2") spec["max_positions"] = spec["default_seq"] = b->seq;
  const std::string file = "profile: " + sig.key();
  State& s = *s_;
  s.cfg = traces::model_from_json(spec, file);
  const ModelSpec& cfg = s.cfg;
  check_runtime_model(cfg, b->seq, file, "");
  at::NoGradGuard no_grad;
  AllocateOnThread own(alloc_.get());
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  s.params = allocate_params(cfg, f32);
  s.grads = allocate_params(cfg, f32);
  init_params(cfg, s.params, 0);
  s.w = bind_weights(cfg, s.params);
  s.g = bind_weights(cfg, s.grads);
  s.tokens = at::randint(0, cfg.vocab, {b->batch, b->seq}, at::kLong);
  s.targets = at::randint(0, cfg.vocab, {b->batch, b->seq}, at::kLong);
  s.x = embedding_forward(cfg, s.w.embedding, s.tokens, &s.emb);
  s.y = layer_forward(cfg, s.w.layers[0], s.x, &s.layer);
  head_forward(cfg, s.w.head, s.y, s.targets, &s.head);
  s.dy = head_backward(cfg, s.w.head, s.head, s.g.head);
  s.dx = layer_backward(cfg, s.w.layers[0], s.layer, s.dy, s.g.layers[0]);
  // Caches as the step leaves them: the block's input was just written by the block before it
  // (read once after the flush; the head's backward follows its forward), its weights and saved
  // activations were not.
  const bool fwd = b->pass == "forward";
  State* p = s_.get();
  auto hot = [](const at::Tensor& t) { return [t] { t.sum(); }; };
  const std::string& role = b->role;
  if (role == "embedding" && fwd) {
    run_ = [p] { EmbeddingActs a; embedding_forward(p->cfg, p->w.embedding, p->tokens, &a); };
    hot_ = hot(s.tokens);
  } else if (role == "embedding") {
    run_ = [p] { embedding_backward(p->cfg, p->emb, p->dx, p->g.embedding); };
    hot_ = hot(s.dx);
  } else if (role == "layer" && fwd) {
    run_ = [p] { LayerActs a; layer_forward(p->cfg, p->w.layers[0], p->x, &a); };
    hot_ = hot(s.x);
  } else if (role == "layer") {
    run_ = [p] { layer_backward(p->cfg, p->w.layers[0], p->layer, p->dy, p->g.layers[0]); };
    hot_ = hot(s.dy);
  } else if (fwd) {
    run_ = [p] { HeadActs a; head_forward(p->cfg, p->w.head, p->y, p->targets, &a); };
    hot_ = hot(s.y);
  } else {
    run_ = [p] { head_backward(p->cfg, p->w.head, p->head, p->g.head); };
    hot_ = hot(s.head.probs);  // right after its forward
  }
}

BlockBench::~BlockBench() = default;
BlockBench::BlockBench(BlockBench&&) noexcept = default;

traces::OpTimeStats BlockBench::time_median(const ProfileOptions& o) {
  at::NoGradGuard no_grad;
  AllocateOnThread own(alloc_.get());
  return time_runs_median(run_, o, hot_);
}

double BlockBench::time_once_us(int64_t flush_bytes) {
  at::NoGradGuard no_grad;
  AllocateOnThread own(alloc_.get());
  flush_caches(flush_bytes);
  hot_();
  const auto t0 = std::chrono::steady_clock::now();
  run_();
  stretch(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());  // as a device op
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e6;
}

traces::OpTimeStats time_block(const traces::OpSignature& sig, const ProfileOptions& o) {
  return BlockBench(sig).time_median(o);
}

}  // namespace protwin::rt
