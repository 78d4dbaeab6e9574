// Shared test inputs for the runtime model tests: seeded weights (norms and biases perturbed so
// their gradients are exercised) and token batches.
#pragma once

#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "runtime/model/transformer.h"

namespace protwin::rt::testing {

constexpr int64_t kBatch = 3;
constexpr int64_t kSeq = 16;

// Small models of both families the tests use (the family's defaults for the rest).
inline ModelSpec tiny_gpt2() {
  return traces::model_from_json({{"family", "gpt2"}, {"hidden", 64}, {"layers", 2}, {"heads", 4}, {"vocab", 97},
                                  {"max_positions", kSeq}},
                                 "tiny_gpt2");
}
inline ModelSpec tiny_llama() {
  return traces::model_from_json({{"family", "llama"}, {"hidden", 64}, {"layers", 2}, {"heads", 4}, {"kv_heads", 2},
                                  {"ffn_hidden", 176}, {"vocab", 97}},
                                 "tiny_llama");
}

inline std::vector<at::Tensor> test_params(const ModelSpec& cfg, uint64_t seed) {
  std::vector<at::Tensor> flat = allocate_params(cfg, at::TensorOptions().dtype(at::kFloat));
  init_params(cfg, flat, seed);
  at::Generator gen = at::detail::createCPUGenerator(seed + 1);
  at::NoGradGuard no_grad;
  for (at::Tensor& p : flat)
    if (p.dim() == 1) p.add_(at::randn(p.sizes(), gen, at::TensorOptions().dtype(at::kFloat)) * 0.1);
  return flat;
}

inline at::Tensor random_tokens(const ModelSpec& cfg, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(cfg.vocab, {kBatch, kSeq}, gen, at::TensorOptions().dtype(at::kLong));
}

inline std::vector<at::Tensor> zeros_like_all(const std::vector<at::Tensor>& v) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : v) out.push_back(at::zeros_like(t));
  return out;
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace protwin::rt::testing
