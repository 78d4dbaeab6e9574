// The op signatures the profiler measures: the forward kernels (and backward GEMMs) of the model
// zoo's small models, as the workload model (sim/workload/workload.cpp) lists them, or the
// kernels of given plans. The runtime does not link sim/, so the small models' kernel shapes are
// restated here from the workload's formulas (a plan's attrs.kernels are the exact list).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/op_signature.h"
#include "traces/plan.h"

namespace protwin::rt {

struct ProfileModel {
  std::string name;
  std::string family;  // "gpt2" | "llama"
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  int64_t batch = 0, seq = 0;
};

// gpt2-tiny and llama-tiny at batch 2, 4, 8 and a GPT-2-small-sized byte model (hidden 512,
// 8 heads, ffn 2048) at batch 4, all at sequence 256 (the zoo's small models' default).
std::vector<ProfileModel> default_profile_models();

// The distinct forward signatures of one model's iteration plus the backward GEMMs (a profile
// entry only serves backward for GEMMs; hardware_cost_model.h), in first-seen order.
std::vector<traces::OpSignature> model_signatures(const ProfileModel& m);

// The same from a plan's forward/recompute/backward ops (attrs.kernels).
std::vector<traces::OpSignature> plan_signatures(const traces::Plan& plan);

// The backward of every non-GEMM signature, as "<kind>_backward" with the same shape and dtype:
// measured so the cost model can price backward kernels from the profile (today a profile entry
// serves only GEMMs in backward; hardware_cost_model.h).
std::vector<traces::OpSignature> backward_signatures(const std::vector<traces::OpSignature>& forward);

// Appends the signatures of `more` not already in `into`.
void merge_signatures(std::vector<traces::OpSignature>& into, const std::vector<traces::OpSignature>& more);

}  // namespace protwin::rt
