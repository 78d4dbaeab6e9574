#include "sim/engine/op_builder.h"

#include <algorithm>

#include "sim/workload/workload.h"
#include "traces/kernel_kinds.h"

namespace protwin::sim {

using traces::Op;
using traces::OpKind;

namespace make_op {

namespace {
Op on(OpKind kind, const std::string& stream, int64_t bytes = 0, int64_t params = 0) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.work.bytes = bytes;
  op.work.params = params;
  return op;
}
}  // namespace

Op compute(traces::Plan& plan, OpKind kind, const std::string& stream, traces::KernelSet kernels,
           const traces::KernelSet& around) {
  Op op = on(kind, stream, static_cast<int64_t>(total_bytes(kernels)));
  op.work.flops = total_flops(kernels);
  for (const auto& k : around) {
    kernels.push_back(k);
    op.work.bytes += static_cast<int64_t>(k.bytes * static_cast<double>(k.count));
  }
  op.kernels = plan.add_kernel_set(std::move(kernels));
  return op;
}

Op copy(OpKind kind, const std::string& stream, int64_t bytes, traces::OpSubKind what, bool pinned) {
  Op op = on(kind, stream, bytes);
  op.sub_kind = what;
  op.pinned = pinned;
  return op;
}

Op collective(OpKind kind, const std::string& stream, int64_t bytes, const traces::CollectiveGroup& group,
              bool host_sync) {
  Op op = on(kind, stream, bytes);
  op.group = group;
  op.host_sync = host_sync;
  return op;
}

Op send_recv(const std::string& stream, int64_t bytes, bool inter_node, bool host_sync) {
  return collective(OpKind::kSendRecv, stream, bytes, {2, inter_node ? 1 : 2, 0, inter_node}, host_sync);
}

Op adam_device(const std::string& stream, int64_t params, double bytes_per_param) {
  Op op = on(OpKind::kAdamDevice, stream, 0, params);
  op.bytes_per_param = bytes_per_param;
  return op;
}

Op host(OpKind kind, const std::string& stream, int64_t params, int64_t bytes, traces::OpSubKind what) {
  Op op = on(kind, stream, bytes, params);
  op.sub_kind = what;
  return op;
}

traces::Kernel elementwise_kernel(int64_t elements, const std::string& dtype, double flops, double bytes) {
  return {{traces::kernel_kinds::kElementwise, {elements}, dtype}, 1, flops, bytes};
}

}  // namespace make_op

void normalise_deps(std::vector<int>& deps) {
  deps.erase(std::remove(deps.begin(), deps.end(), -1), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
}

int OpBuilder::add(Op op, std::vector<int> deps, int block, int chunk) {
  op.id = static_cast<int>(plan_.ops.size());
  op.block = block;
  op.chunk = chunk;
  normalise_deps(deps);
  op.deps = std::move(deps);
  plan_.ops.push_back(std::move(op));
  return plan_.ops.back().id;
}

void OpBuilder::mem(int id, const std::string& pool, int64_t delta, traces::MemAt at, int tensor) {
  if (delta != 0) op(id).mem.push_back(traces::MemEffect{pool, delta, at, tensor});
}

int OpBuilder::tensor(const std::string& name, int64_t bytes, traces::TensorKind kind, const std::string& home,
                      const std::string& dtype) {
  const int id = static_cast<int>(plan_.tensors.size());
  plan_.tensors.push_back({id, name, Bytes(bytes), dtype, kind, home});
  return id;
}

}  // namespace protwin::sim
