#include "sim/offload/compiler/block_layout.h"

#include <algorithm>

#include "traces/error.h"

namespace protwin::sim::offload {

const char* act_mode_name(ActMode m) {
  static constexpr const char* kNames[] = {"none", "ckpt", "swap"};  // in ActMode's order
  static_assert(std::size(kNames) == static_cast<size_t>(ActMode::kSwap) + 1, "a name per ActMode");
  return kNames[static_cast<size_t>(m)];
}

int effective_swap_spacing(int n_swap, int n_checkpoint, int swap_spacing) {
  return n_swap > 0 ? std::clamp(swap_spacing, 1, std::max(1, (n_swap + n_checkpoint) / n_swap)) : 1;
}

std::vector<ActMode> block_layout(int layers, int n_swap, int n_checkpoint, int swap_spacing) {
  PROTWIN_CHECK(n_swap >= 0 && n_checkpoint >= 0 && n_swap + n_checkpoint <= layers,
                "knobs n_swap=", n_swap, ", n_checkpoint=", n_checkpoint,
                ": n_swap + n_checkpoint must be in [0, ", layers, "] (the number of layers)");
  std::vector<ActMode> modes(static_cast<size_t>(layers), ActMode::kNone);
  // The SWAP/CKPT region is the first n_swap + n_checkpoint layers, so NONE layers are last.
  // SWAP layers are spread over it `swap_spacing` apart (closer if the region is too short);
  // CKPT layers take the remaining slots of the region: between and after the SWAP layers.
  const int region = n_swap + n_checkpoint;
  if (n_swap > 0) {
    const int spacing = effective_swap_spacing(n_swap, n_checkpoint, swap_spacing);
    for (int k = 0; k < n_swap; ++k) modes[static_cast<size_t>(k * spacing)] = ActMode::kSwap;
  }
  for (int i = 0; i < region; ++i)
    if (modes[static_cast<size_t>(i)] == ActMode::kNone) modes[static_cast<size_t>(i)] = ActMode::kCheckpoint;
  return modes;
}

}  // namespace protwin::sim::offload
