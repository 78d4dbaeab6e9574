// Which device replays a plan: the emulated device (runtime/memory, always built) or a CUDA GPU
// (runtime/cuda/cuda_*, compiled only when LibTorch has CUDA; PROTWIN_WITH_CUDA is then defined
// for the runtime). `--device auto` takes CUDA when this build has it and
// torch::cuda::is_available(), else the emulated device. Runtime header: includes ATen (via the
// replayer).
#pragma once

#include <memory>
#include <string>

#include "runtime/executor/plan_replayer.h"

namespace protwin::rt {

enum class DeviceKind { kEmulated, kCuda };

// "auto", "cuda" or "emulated" (the --device flag). Explicit "cuda" on a build or machine
// without it is a user error naming --device and the reason.
DeviceKind resolve_device(const std::string& request);

// True when the runtime was compiled with the CUDA backend.
bool cuda_backend_compiled();
// True when the CUDA backend is compiled AND LibTorch sees a GPU. Never throws.
bool cuda_device_available();
// Why cuda_device_available() is false ("" when it is true), for messages and test skips.
std::string cuda_unavailable_reason();

const char* device_kind_name(DeviceKind kind);

// The replayer of `rp` on `kind`. `rp` must outlive it.
std::unique_ptr<Replayer> make_replayer(const RuntimePlan& rp, const ReplayOptions& options, DeviceKind kind);

}  // namespace protwin::rt
