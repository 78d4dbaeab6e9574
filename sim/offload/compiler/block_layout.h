// Interleaved block management (ProTrain §3.2, REFERENCE §1): which decoder layers keep their
// activations (NONE), recompute them (CKPT) or swap them to pinned host memory (SWAP).
// SWAP layers come first, one every `swap_spacing` layers (their D2H hides behind the forward of
// the layers between, their H2D behind the most backward compute); CKPT layers fill the gaps
// between and after them; NONE layers come last (backward reaches them first).
#pragma once

#include <vector>

#include "sim/offload/compiler/knobs.h"

namespace protwin::sim::offload {

// Modes of `layers` decoder layers. Requires n_swap + n_checkpoint <= layers (protwin::Error
// naming the knobs otherwise).
std::vector<ActMode> block_layout(int layers, int n_swap, int n_checkpoint, int swap_spacing);

// The spacing block_layout actually uses: `swap_spacing`, narrowed so that n_swap SWAP layers fit
// the SWAP/CKPT region of n_swap + n_checkpoint layers (1 without SWAP layers).
int effective_swap_spacing(int n_swap, int n_checkpoint, int swap_spacing);

}  // namespace protwin::sim::offload
