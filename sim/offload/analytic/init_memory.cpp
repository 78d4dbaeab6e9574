#include "sim/offload/analytic/init_memory.h"

#include <algorithm>

#include "traces/op_signature.h"

namespace protwin::sim::offload {

InitMemory init_memory(const Workload& w, const OffloadKnobs& k) {
  const int64_t n = w.parameter_count();
  int64_t unit = 0, tensor = 0;
  for (const auto& b : w.blocks) {
    unit = std::max(unit, b.param_count);
    for (const auto& t : b.params)
      if (t.tied_to.empty()) tensor = std::max(tensor, t.numel);
  }
  InitMemory m;
  if (!k.offload) {
    m.how = "ddp";
    m.host_bytes = 4 * n;
  } else if (k.host_fp32_params) {
    m.how = "fsdp";
    m.host_bytes = 4 * n + 4 * unit;
  } else if (k.pinned_alloc == "torch_flat") {
    m.how = "zero_init";
    m.gpu_bytes = traces::dtype_bytes(w.options.dtype) * tensor;
  } else {
    m.how = "chunks";
    m.host_bytes = 4 * tensor;
  }
  return m;
}

}  // namespace protwin::sim::offload
