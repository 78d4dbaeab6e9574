#include "runtime/profile/profile_shapes.h"
#include "traces/kernel_kinds.h"

#include <algorithm>

namespace protwin::rt {

namespace kk = traces::kernel_kinds;  // the kernel-kind registry

std::vector<ProfileModel> default_profile_models() {
  std::vector<ProfileModel> out;
  for (int64_t b : {2, 4, 8}) {
    out.push_back({"gpt2-tiny", "gpt2", 256, 4, 4, 1024, 256, b, 256});
    out.push_back({"llama-tiny", "llama", 256, 4, 2, 768, 256, b, 256});
  }
  out.push_back({"gpt2-small-ish", "gpt2", 512, 8, 8, 2048, 256, 4, 256});
  return out;
}

namespace {
void add(std::vector<traces::OpSignature>& v, traces::OpSignature s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}
void add_gemm(std::vector<traces::OpSignature>& v, int64_t m, int64_t n, int64_t k) {
  add(v, {kk::kGemm, {m, n, k}, "fp32"});
  add(v, {kk::kGemm, {m, k, n}, "fp32"});  // dX = dY W^T
  add(v, {kk::kGemm, {k, n, m}, "fp32"});  // dW = X^T dY
}
}  // namespace

std::vector<traces::OpSignature> model_signatures(const ProfileModel& m) {
  std::vector<traces::OpSignature> v;
  const int64_t t = m.batch * m.seq, h = m.hidden, f = m.ffn, d = h / m.heads;
  const int64_t kv = m.kv_heads * d, ba = m.batch * m.heads;
  const bool gpt2 = m.family == "gpt2";
  const std::string norm = gpt2 ? kk::kLayernorm : kk::kRmsnorm;
  // embedding block
  add(v, {kk::kEmbedding, {t * h}, "fp32"});
  if (gpt2) {
    add(v, {kk::kEmbedding, {m.seq * h}, "fp32"});
    add(v, {kk::kElementwise, {t * h}, "fp32"});
  }
  // decoder block
  add(v, {norm, {t * h}, "fp32"});
  if (gpt2) {
    add_gemm(v, t, h + 2 * kv, h);
  } else {
    add_gemm(v, t, h, h);
    add_gemm(v, t, kv, h);
    add(v, {kk::kRope, {ba, m.seq, d}, "fp32"});
    add(v, {kk::kRope, {m.batch * m.kv_heads, m.seq, d}, "fp32"});
  }
  add(v, {kk::kAttention, {ba, m.seq, m.seq, d}, "fp32"});
  add(v, {kk::kSoftmax, {ba * m.seq * m.seq}, "fp32"});
  add_gemm(v, t, h, h);
  add(v, {kk::kElementwise, {t * h}, "fp32"});
  add_gemm(v, t, f, h);
  add(v, {gpt2 ? kk::kGelu : kk::kSwiglu, {t * f}, "fp32"});
  add_gemm(v, t, h, f);
  // head block
  add_gemm(v, t, m.vocab, h);
  add(v, {kk::kCrossEntropy, {t, m.vocab}, "fp32"});
  return v;
}

std::vector<traces::OpSignature> plan_signatures(const traces::Plan& plan) {
  std::vector<traces::OpSignature> v;
  for (const auto& op : plan.ops) {
    if (op.kind != traces::OpKind::kForward && op.kind != traces::OpKind::kBackward && op.kind != traces::OpKind::kRecompute) continue;
    for (const auto& k : plan.kernels_of(op))
      if (op.kind != traces::OpKind::kBackward || k.sig.kind == kk::kGemm) add(v, k.sig);
  }
  return v;
}

std::vector<traces::OpSignature> backward_signatures(const std::vector<traces::OpSignature>& forward) {
  std::vector<traces::OpSignature> v;
  for (const auto& s : forward)
    if (s.kind != kk::kGemm && s.kind.find("_backward") == std::string::npos) add(v, {s.kind + "_backward", s.shape, s.dtype});
  return v;
}

void merge_signatures(std::vector<traces::OpSignature>& into, const std::vector<traces::OpSignature>& more) {
  for (const auto& s : more) add(into, s);
}

}  // namespace protwin::rt
