// Oracles: published parameter counts (REFERENCE.md §3, §4); LibTorch autograd on the same model
// written with high-level ops (autograd_model.cpp); bitwise equality for recompute and for
// weights that are views into one flat chunk.
#include "torch_catch.h"  // first: see there

#include <functional>

#include <ATen/ATen.h>

#include "autograd_model.h"
#include "model_fixtures.h"
#include "runtime/model/transformer.h"
#include "traces/error.h"

using namespace protwin::rt;
using namespace protwin::rt::testing;

namespace {

ModelSpec gpt2_like(int64_t hidden, int64_t layers, int64_t heads) {
  return protwin::traces::model_from_json(
      {{"family", "gpt2"}, {"hidden", hidden}, {"layers", layers}, {"heads", heads}, {"vocab", 50257}}, "gpt2_like");
}

}  // namespace

TEST_CASE("parameter counts match published figures", "[runtime][model]") {
  // GPT-2 small (124,439,808) and Colossal-AI's GPT-2 10B (10,279,047,168): REFERENCE.md §4.
  CHECK(gpt2_like(768, 12, 12).parameter_count() == 124439808);
  CHECK(gpt2_like(4096, 50, 16).parameter_count() == 10279047168);
  // Llama-3.1-8B: 8,030,261,248 (REFERENCE.md §3, Fujii et al.'s check value).
  const ModelSpec l = protwin::traces::model_from_json({{"family", "llama"}, {"hidden", 4096}, {"layers", 32},
                                                         {"heads", 32}, {"kv_heads", 8}, {"ffn_hidden", 14336},
                                                         {"vocab", 128256}},
                                                        "llama3.1-8b");
  CHECK(l.parameter_count() == 8030261248);
}

TEST_CASE("parameters are listed in execution order", "[runtime][model]") {
  for (const ModelSpec& cfg : {tiny_gpt2(), tiny_llama()}) {
    const auto specs = stored_parameters(cfg);
    CHECK(specs.front().name == "embed.tokens.weight");
    CHECK(specs.back().name == (is_gpt2(cfg) ? "final_norm.bias" : "lm_head.weight"));
    for (size_t i = 1; i < specs.size(); ++i) CHECK(specs[i - 1].block <= specs[i].block);
    CHECK(specs.back().block == head_block(cfg));
  }
}

TEST_CASE("models the runtime does not implement are refused with the field named", "[runtime][model]") {
  auto refusal = [](ModelSpec m, const std::function<void(ModelSpec&)>& edit, int64_t seq = kSeq) {
    edit(m);
    try {
      check_runtime_model(m, seq, "m.json", "/model");
    } catch (const protwin::Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(refusal(tiny_gpt2(), [](ModelSpec&) {}) == "(accepted)");
  CHECK(refusal(tiny_llama(), [](ModelSpec&) {}, 4096) == "(accepted)");  // RoPE: any length
  CHECK(refusal(tiny_gpt2(), [](ModelSpec&) {}, kSeq + 1) ==
        "m.json:/model/max_positions: 16 learned positions, but the plan's sequence is 17");
  CHECK(refusal(tiny_gpt2(), [](ModelSpec& m) { m.kv_heads = 2; }) ==
        "m.json:/model/kv_heads: the runtime's GPT-2 needs kv_heads == heads (4), got 2");
  CHECK(refusal(tiny_gpt2(), [](ModelSpec& m) { m.activation = "relu"; }) ==
        "m.json:/model/activation: the runtime's GPT-2 needs \"gelu\", got \"relu\"");
  CHECK(refusal(tiny_llama(), [](ModelSpec& m) { m.tied_embeddings = true; }) ==
        "m.json:/model/tied_embeddings: the runtime's LLaMA needs false, got true");
  CHECK(refusal(tiny_llama(), [](ModelSpec& m) { m.family = "opt"; }) ==
        "m.json:/model/family: the runtime implements gpt2 and llama, got \"opt\"");
}

TEST_CASE("weights of the wrong shape or count are refused", "[runtime][model]") {
  const ModelSpec g = tiny_gpt2();
  std::vector<at::Tensor> flat = allocate_params(g, at::TensorOptions().dtype(at::kFloat));
  flat[2] = at::zeros({3});
  CHECK_THROWS_WITH(bind_weights(g, flat),
                    "runtime weights: layers.0.norm_1.weight has shape [3], expected [64]");
  flat.pop_back();
  CHECK_THROWS_WITH(bind_weights(g, flat),
                    "runtime weights: got 27 tensors, the gpt2 model has 28");
}

TEST_CASE("explicit backward equals LibTorch autograd", "[runtime][model]") {
  const ModelSpec cfg = GENERATE(tiny_gpt2(), tiny_llama());
  INFO("family " << cfg.family);
  const std::vector<at::Tensor> params = test_params(cfg, 1234);
  const at::Tensor tokens = random_tokens(cfg, 7), targets = random_tokens(cfg, 8);

  // explicit forward/backward
  const ModelWeights w = bind_weights(cfg, params);
  const std::vector<at::Tensor> grads = zeros_like_all(params);
  ModelWeights gw = bind_weights(cfg, grads);
  ModelActs acts;
  const double loss = model_forward(cfg, w, tokens, targets, acts);
  const at::Tensor dx = model_backward(cfg, w, acts, gw);

  // autograd oracle
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& p : params) leaves.push_back(p.detach().clone().requires_grad_(true));
  at::Tensor emb;
  at::Tensor ref_loss = autograd_loss(cfg, leaves, tokens, targets, &emb);
  ref_loss.backward();

  CHECK(loss == Approx(ref_loss.item<double>()).epsilon(1e-6));
  CHECK(loss > 4.0);  // near ln(97) = 4.57 for small random weights: the loss is real
  const double input_grad_diff = max_abs_diff(dx, emb.grad());
  CHECK(input_grad_diff <= 1e-5);
  const auto specs = stored_parameters(cfg);
  for (size_t i = 0; i < specs.size(); ++i) {
    INFO(specs[i].name);
    REQUIRE(leaves[i].grad().defined());
    const double grad_diff = max_abs_diff(grads[i], leaves[i].grad());
    CHECK(grad_diff <= 1e-5);
    CHECK(grads[i].abs().max().item<double>() > 0.0);  // every parameter gets a gradient
  }
}

TEST_CASE("recompute from the block input reproduces activations bitwise", "[runtime][model]") {
  const ModelSpec cfg = GENERATE(tiny_gpt2(), tiny_llama());
  INFO("family " << cfg.family);
  const std::vector<at::Tensor> params = test_params(cfg, 99);
  const ModelWeights w = bind_weights(cfg, params);
  const at::Tensor tokens = random_tokens(cfg, 3), targets = random_tokens(cfg, 4);
  ModelActs acts;
  model_forward(cfg, w, tokens, targets, acts);
  const std::vector<at::Tensor> grads = zeros_like_all(params);
  ModelWeights gw = bind_weights(cfg, grads);
  model_backward(cfg, w, acts, gw);

  // Checkpoint style: keep only each layer's input, recompute in backward.
  ModelActs ckpt;
  ckpt.embedding = acts.embedding;
  ckpt.head = acts.head;
  for (LayerActs& kept : acts.layers) {
    LayerActs redo;
    const at::Tensor out = layer_forward(cfg, w.layers[ckpt.layers.size()], kept.input, &redo);
    auto a = kept.tensors(), r = redo.tensors();
    REQUIRE(a.size() == r.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(at::equal(*a[i], *r[i]));
    // the no-save forward gives the same output
    CHECK(at::equal(out, layer_forward(cfg, w.layers[ckpt.layers.size()], kept.input, nullptr)));
    // recompute in place from the saved input (the input handle must survive the reset)
    LayerActs inplace;
    inplace.input = kept.input;
    layer_forward(cfg, w.layers[ckpt.layers.size()], inplace.input, &inplace);
    CHECK(at::equal(inplace.att, kept.att));
    ckpt.layers.push_back(redo);
  }
  const std::vector<at::Tensor> grads2 = zeros_like_all(params);
  ModelWeights gw2 = bind_weights(cfg, grads2);
  model_backward(cfg, w, ckpt, gw2);
  for (size_t i = 0; i < grads.size(); ++i) CHECK(at::equal(grads[i], grads2[i]));
}

TEST_CASE("weights and grads as views into one flat chunk give the same results",
          "[runtime][model]") {
  const ModelSpec cfg = GENERATE(tiny_gpt2(), tiny_llama());
  INFO("family " << cfg.family);
  const std::vector<at::Tensor> params = test_params(cfg, 5);
  const auto specs = stored_parameters(cfg);
  at::Tensor chunk = at::empty({cfg.parameter_count()}, at::kFloat);
  at::Tensor grad_chunk = at::zeros({cfg.parameter_count()}, at::kFloat);
  std::vector<at::Tensor> views, grad_views;
  int64_t off = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    views.push_back(chunk.narrow(0, off, specs[i].numel).view(specs[i].shape));
    grad_views.push_back(grad_chunk.narrow(0, off, specs[i].numel).view(specs[i].shape));
    views.back().copy_(params[i]);
    off += specs[i].numel;
  }
  const at::Tensor tokens = random_tokens(cfg, 11), targets = random_tokens(cfg, 12);
  ModelActs a1, a2;
  const ModelWeights w1 = bind_weights(cfg, params), w2 = bind_weights(cfg, views);
  const std::vector<at::Tensor> g1 = zeros_like_all(params);
  ModelWeights gw1 = bind_weights(cfg, g1), gw2 = bind_weights(cfg, grad_views);
  CHECK(model_forward(cfg, w1, tokens, targets, a1) == model_forward(cfg, w2, tokens, targets, a2));
  model_backward(cfg, w1, a1, gw1);
  model_backward(cfg, w2, a2, gw2);
  for (size_t i = 0; i < specs.size(); ++i) CHECK(at::equal(g1[i], grad_views[i]));
  // the gradients landed in the flat grad chunk itself
  CHECK(grad_chunk.abs().sum().item<double>() > 0.0);
}

TEST_CASE("bf16 weights run the same model within bf16 precision", "[runtime][model]") {
  // Oracle: the fp32 run of the same weights. bf16 keeps 8 mantissa bits (relative step 2^-8), so
  // the loss must agree to about 1 % and each gradient must point the same way (cosine > 0.99).
  const ModelSpec cfg = GENERATE(tiny_gpt2(), tiny_llama());
  INFO("family " << cfg.family);
  const std::vector<at::Tensor> params = test_params(cfg, 77);
  std::vector<at::Tensor> half;
  for (const at::Tensor& p : params) half.push_back(p.to(at::kBFloat16));
  const at::Tensor tokens = random_tokens(cfg, 1), targets = random_tokens(cfg, 2);
  const std::vector<at::Tensor> g32 = zeros_like_all(params), g16 = zeros_like_all(half);
  ModelWeights gw32 = bind_weights(cfg, g32), gw16 = bind_weights(cfg, g16);
  ModelActs a32, a16;
  const double loss32 = model_forward(cfg, bind_weights(cfg, params), tokens, targets, a32);
  const double loss16 = model_forward(cfg, bind_weights(cfg, half), tokens, targets, a16);
  model_backward(cfg, bind_weights(cfg, params), a32, gw32);
  model_backward(cfg, bind_weights(cfg, half), a16, gw16);
  CHECK(a16.layers[0].act.scalar_type() == at::kBFloat16);
  const double rel_loss_diff = std::abs(loss16 - loss32) / loss32;
  CHECK(rel_loss_diff <= 1e-2);
  const auto specs = stored_parameters(cfg);
  for (size_t i = 0; i < specs.size(); ++i) {
    INFO(specs[i].name);
    const at::Tensor a = g32[i].flatten(), b = g16[i].flatten().to(at::kFloat);
    const double cosine = (a.dot(b) / (a.norm() * b.norm())).item<double>();
    CHECK(cosine >= 0.99);
  }
}
