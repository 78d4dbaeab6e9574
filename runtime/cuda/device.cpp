#include "runtime/cuda/device.h"

#include <torch/cuda.h>

#include "traces/error.h"

#ifdef PROTWIN_WITH_CUDA
#include "runtime/cuda/cuda_device_ops.h"
#endif

namespace protwin::rt {

bool cuda_backend_compiled() {
#ifdef PROTWIN_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::string cuda_unavailable_reason() {
  if (!cuda_backend_compiled())
    return "this build's LibTorch has no CUDA (the CUDA backend in runtime/cuda/ was not compiled)";
  if (!torch::cuda::is_available()) return "LibTorch sees no CUDA GPU (torch::cuda::is_available() is false)";
  return "";
}

bool cuda_device_available() { return cuda_unavailable_reason().empty(); }

DeviceKind resolve_device(const std::string& request) {
  if (request == "emulated") return DeviceKind::kEmulated;
  if (request == "auto") return cuda_device_available() ? DeviceKind::kCuda : DeviceKind::kEmulated;
  PROTWIN_CHECK(request == "cuda", "--device: expected auto, cuda or emulated, got \"", request, "\"");
  const std::string why = cuda_unavailable_reason();
  PROTWIN_CHECK(why.empty(), "--device cuda: ", why);
  return DeviceKind::kCuda;
}

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::kCuda ? "cuda" : "emulated"; }

std::unique_ptr<Replayer> make_replayer(const RuntimePlan& rp, const ReplayOptions& options, DeviceKind kind) {
  if (kind == DeviceKind::kEmulated) return std::make_unique<PlanReplayer>(rp, options);
  // The ranks' collectives pass host pointers to MPI: a CUDA device would need a CUDA-aware MPI.
  PROTWIN_CHECK(rp.ranks == 1, "--device cuda: plans of more than one GPU (", rp.ranks,
                " ranks) are replayed on the emulated device only\nhint: --device emulated");
#ifdef PROTWIN_WITH_CUDA
  return std::make_unique<PlanReplayer>(rp, options, std::make_unique<CudaDevice>(rp));
#else
  (void)rp;
  (void)options;
  throw Error(detail::concat("--device cuda: ", cuda_unavailable_reason()));
#endif
}

}  // namespace protwin::rt
