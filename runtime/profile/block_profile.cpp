#include "runtime/profile/block_profile.h"

#include <algorithm>

#include <ATen/ATen.h>

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

traces::OpTimeStats time_block(const traces::OpSignature& sig, const ProfileOptions& o) {
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
  const ModelSpec cfg = traces::model_from_json(spec, file);
  check_runtime_model(cfg, b->seq, file, "");
  at::NoGradGuard no_grad;
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::vector<at::Tensor> params = allocate_params(cfg, f32), grads = allocate_params(cfg, f32);
  init_params(cfg, params, 0);
  const ModelWeights w = bind_weights(cfg, params);
  ModelWeights g = bind_weights(cfg, grads);
  const at::Tensor tokens = at::randint(0, cfg.vocab, {b->batch, b->seq}, at::kLong);
  const at::Tensor targets = at::randint(0, cfg.vocab, {b->batch, b->seq}, at::kLong);
  // One forward and backward through the three blocks: every block's saved tensors and input
  // gradient, as the step hands them over.
  EmbeddingActs emb;
  LayerActs layer;
  HeadActs head;
  const at::Tensor x = embedding_forward(cfg, w.embedding, tokens, &emb);
  const at::Tensor y = layer_forward(cfg, w.layers[0], x, &layer);
  head_forward(cfg, w.head, y, targets, &head);
  const at::Tensor dy = head_backward(cfg, w.head, head, g.head);
  const at::Tensor dx = layer_backward(cfg, w.layers[0], layer, dy, g.layers[0]);
  // Caches as the step leaves them: the block's input was just written by the block before it
  // (read once after the flush; the head's backward follows its forward), its weights and saved
  // activations were not.
  const bool fwd = b->pass == "forward";
  auto hot = [](const at::Tensor& t) { return [t] { t.sum(); }; };
  if (b->role == "embedding") {
    if (fwd) return time_runs_median([&] { EmbeddingActs a; embedding_forward(cfg, w.embedding, tokens, &a); }, o, hot(tokens));
    return time_runs_median([&] { embedding_backward(cfg, emb, dx, g.embedding); }, o, hot(dx));
  }
  if (b->role == "layer") {
    if (fwd) return time_runs_median([&] { LayerActs a; layer_forward(cfg, w.layers[0], x, &a); }, o, hot(x));
    return time_runs_median([&] { layer_backward(cfg, w.layers[0], layer, dy, g.layers[0]); }, o, hot(dy));
  }
  if (fwd) return time_runs_median([&] { HeadActs a; head_forward(cfg, w.head, y, targets, &a); }, o, hot(y));
  return time_runs_median([&] { head_backward(cfg, w.head, head, g.head); }, o, hot(head.probs));  // right after its forward
}

}  // namespace protwin::rt
