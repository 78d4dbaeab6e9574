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

inline std::vector<at::Tensor> test_params(const ModelConfig& cfg, uint64_t seed) {
  std::vector<at::Tensor> flat = allocate_params(cfg, at::TensorOptions().dtype(at::kFloat));
  init_params(cfg, flat, seed);
  at::Generator gen = at::detail::createCPUGenerator(seed + 1);
  at::NoGradGuard no_grad;
  for (at::Tensor& p : flat)
    if (p.dim() == 1) p.add_(at::randn(p.sizes(), gen, at::TensorOptions().dtype(at::kFloat)) * 0.1);
  return flat;
}

inline at::Tensor random_tokens(const ModelConfig& cfg, uint64_t seed) {
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
