// The one op builder of the plan compilers (issue 17): the offload compiler (sim/offload/compiler) and the
// Megatron compiler (sim/parallel) make every compute, copy, collective, send/recv, Adam and host
// op here, with the typed fields the cost model and the runtime read (DESIGN §3, version 4). A
// maker returns the op without id, deps, place (block, chunk), tensors or memory effects: a plan
// held whole takes it through OpBuilder::add, the 4D op stream keeps it as a template and copies
// it with its own ids (both normalise deps with normalise_deps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/plan.h"

namespace protwin::sim {

namespace make_op {
// Forward, backward or recompute running `kernels` and the system's kernels `around` them, as one
// kernel set of `plan`; work: the kernels' flops and bytes (`around` adds bytes only).
traces::Op compute(traces::Plan& plan, traces::OpKind kind, const std::string& stream, traces::KernelSet kernels,
                   const traces::KernelSet& around = {});
// h2d or d2h of `bytes`, moving `what`.
traces::Op copy(traces::OpKind kind, const std::string& stream, int64_t bytes, traces::OpSubKind what, bool pinned);
// A collective of a buffer of `bytes` (NCCL-tests convention) over `group`. host_sync: the host
// waits for its end before it issues more (.item(), torch.cuda.synchronize()).
traces::Op collective(traces::OpKind kind, const std::string& stream, int64_t bytes,
                      const traces::CollectiveGroup& group, bool host_sync = false);
// `bytes` exchanged with one peer, on this node or across nodes.
traces::Op send_recv(const std::string& stream, int64_t bytes, bool inter_node, bool host_sync = false);
// Device Adam over `params`; bytes_per_param 0: the machine's fused device Adam.
traces::Op adam_device(const std::string& stream, int64_t params, double bytes_per_param = 0);
// CPU work (adam_cpu, host_pass, host_cast) over `params` moving `bytes`.
traces::Op host(traces::OpKind kind, const std::string& stream, int64_t params, int64_t bytes,
                traces::OpSubKind what = traces::OpSubKind::kNone);
// One elementwise kernel over `elements` (a pass a system or framework adds around the model's).
traces::Kernel elementwise_kernel(int64_t elements, const std::string& dtype, double flops, double bytes);
}  // namespace make_op

// Drops -1 (no such op), sorts and removes repeats.
void normalise_deps(std::vector<int>& deps);

// Appends ops to a plan held whole, ids in order.
class OpBuilder {
 public:
  explicit OpBuilder(traces::Plan& plan) : plan_(plan) {}
  // `op` with the next id, its deps normalised, in `block` and `chunk`; returns its id.
  int add(traces::Op op, std::vector<int> deps, int block = -1, int chunk = -1);
  traces::Op& op(int id) { return plan_.ops[static_cast<size_t>(id)]; }
  // A memory effect of op `id` (none when delta is 0).
  void mem(int id, const std::string& pool, int64_t delta, traces::MemAt at, int tensor = -1);
  // `bytes` of `pool` held while op `id` runs (its workspace).
  void transient(int id, const std::string& pool, int64_t bytes) {
    mem(id, pool, bytes, traces::MemAt::kStart);
    mem(id, pool, -bytes, traces::MemAt::kEnd);
  }
  int tensor(const std::string& name, int64_t bytes, traces::TensorKind kind, const std::string& home,
             const std::string& dtype = "fp16");

 private:
  traces::Plan& plan_;
};

}  // namespace protwin::sim
