// Block signatures the calibration's block-probe tests use (a gpt2 decoder layer's forward and the
// head's backward at batch 4, sequence 256, hidden 256), a kernel beside them, and a measured
// profile of them.
#pragma once

#include <utility>
#include <vector>

#include "traces/block_signature.h"
#include "traces/op_profile.h"

namespace protwin::testing {

inline const traces::OpSignature kLayer =
    traces::block_signature({"forward", "layer", "gpt2", 4, 256, 256, 4, 4, 1024, 256}, "fp32");
inline const traces::OpSignature kHead =
    traces::block_signature({"backward", "head", "gpt2", 4, 256, 256, 4, 4, 1024, 256}, "fp32");
inline const traces::OpSignature kGemm{"gemm", {1024, 768, 256}, "fp32"};

// A measured profile with one run of each signature at its time (us).
inline traces::OpProfile measured_profile(const std::vector<std::pair<traces::OpSignature, double>>& runs) {
  traces::OpProfile p("emulated", "measured", "test");
  for (const auto& [sig, us] : runs) {
    traces::OpProfileEntry e;
    e.sig = sig;
    e.us.add(us);
    p.add(e);
  }
  return p;
}

}  // namespace protwin::testing
