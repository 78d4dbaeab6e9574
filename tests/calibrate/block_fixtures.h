// Block signatures the calibration's block-probe tests use (a gpt2 decoder layer's forward and the
// head's backward at batch 4, sequence 256, hidden 256).
#pragma once

#include "traces/block_signature.h"

namespace protwin::testing {

inline const traces::OpSignature kLayer =
    traces::block_signature({"forward", "layer", "gpt2", 4, 256, 256, 4, 4, 1024, 256}, "fp32");
inline const traces::OpSignature kHead =
    traces::block_signature({"backward", "head", "gpt2", 4, 256, 256, 4, 4, 1024, 256}, "fp32");

}  // namespace protwin::testing
