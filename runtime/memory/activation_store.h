// Saved activations of the decoder layers, per the plan's block modes: kept on the device (NONE),
// swapped to host memory and back (SWAP: d2h after forward, h2d before backward), or reduced to
// the block input and recomputed (CKPT). The embedding and head always keep theirs (the replayer
// holds those). Copies and allocations go through DeviceOps (copy_engine.h), so every device
// shares this store. Runtime header: includes ATen.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/memory/copy_engine.h"
#include "runtime/model/transformer.h"

namespace protwin::rt {

class ActivationStore {
 public:
  // `device` must outlive the store.
  ActivationStore(int64_t layers, DeviceOps& device);

  // The device-side activations of a layer (forward fills them, backward reads them).
  LayerActs& device(int64_t layer) { return device_.at(static_cast<size_t>(layer)); }
  // CKPT: keep only the block input.
  void keep_input_only(int64_t layer);
  // SWAP out (a d2h op): every saved tensor copied to host memory, then dropped on the device.
  void swap_out(int64_t layer);
  // SWAP in (an h2d op): copied back into fresh device tensors; the host copies are dropped.
  void swap_in(int64_t layer);
  // After backward: nothing of the layer stays.
  void drop(int64_t layer);
  void clear();

  // Bytes of the tensors currently held (device side, host side).
  int64_t device_bytes();
  int64_t host_bytes();

 private:
  DeviceOps& dev_;
  std::vector<LayerActs> device_, host_;
};

}  // namespace protwin::rt
