#include "sim/offload/compiler/host_work.h"

#include <set>

#include "sim/engine/op_builder.h"
#include "traces/error.h"

namespace protwin::sim::offload {

namespace {

// Modules of a block: every dotted prefix of its parameters' names but the bare "layers" list.
int modules_of(const Block& block, bool with_params_only) {
  std::set<std::string> modules;
  for (const auto& p : block.params) {
    size_t dot = p.name.rfind('.');
    if (dot == std::string::npos) continue;
    std::string m = p.name.substr(0, dot);
    modules.insert(m);
    if (with_params_only) continue;
    while ((dot = m.rfind('.')) != std::string::npos) {
      m = m.substr(0, dot);
      if (m != "layers") modules.insert(m);
    }
  }
  return static_cast<int>(modules.size());
}

}  // namespace

HostWork block_host_work(const std::string& system, const Block& block, bool backward, int64_t ranks) {
  const int params = static_cast<int>(block.params.size());
  HostWork w;
  if (params == 0) return w;
  if (system == "deepspeed") {
    w.hooks = 2 * modules_of(block, false) + (backward ? params : 0);
    w.eager_ops = params + (backward ? params : 0) + (ranks > 1 ? 1 + params : 0);
    w.copies = backward ? 2 * params : 0;
  } else if (system == "fsdp") {
    w.hooks = 2;
  } else if (system == "colossalai") {
    w.hooks = 2 * modules_of(block, true) + (backward ? params : 0);
    w.eager_ops = backward ? params : 0;
  } else if (system == "protrain") {
    w.hooks = 2;
  } else if (system == "ddp") {
    w.eager_ops = backward ? params : 0;
  }
  return w;
}

HostWork fetch_host_work(const std::string& system, int64_t tensors) {
  HostWork w;
  if (system != "deepspeed" || tensors <= 0) return w;
  w.copies = static_cast<int>(tensors - 1);
  w.sync = true;
  return w;
}

std::vector<traces::Kernel> fetch_kernels(const std::string& system, const Block& block, int64_t ranks,
                                          const std::string& dtype) {
  if (system != "deepspeed" || ranks <= 1 || block.param_count <= 0) return {};
  const int elem_bytes = traces::dtype_bytes(dtype);
  const double shard = static_cast<double>((block.param_count + ranks - 1) / ranks);
  return {make_op::elementwise_kernel(block.param_count, dtype, 0,
                                      2.0 * elem_bytes * (static_cast<double>(block.param_count) + shard))};
}

std::vector<traces::Kernel> grad_reduce_kernels(const std::string& system, const Block& block,
                                                const std::string& dtype) {
  if (system != "deepspeed" || block.param_count <= 0) return {};
  const traces::Kernel k = make_op::elementwise_kernel(
      block.param_count, dtype, 0, 2.0 * traces::dtype_bytes(dtype) * static_cast<double>(block.param_count));
  return {k, k, k};  // the IPG bucket copy, torch.cat, div_
}

std::vector<traces::Kernel> reduced_grad_kernels(const std::string& system, int64_t shard_elems,
                                                 const std::string& dtype) {
  if (system != "colossalai" || shard_elems <= 0) return {};
  const double e = traces::dtype_bytes(dtype), n = static_cast<double>(shard_elems);
  auto pass = [&](double bytes_per_elem) { return make_op::elementwise_kernel(shard_elems, dtype, 0, bytes_per_elem * n); };
  return {pass(2 * e), pass(e + 1), pass(1), pass(e + 1), pass(1)};  // div_, isinf, any, isnan, any
}

HostWork reduced_grad_host_work(const std::string& system) {
  if (system != "colossalai") return {};
  return {0, 0, 2, true};
}

HostWork grad_offload_host_work(const std::string& system) {
  if (system != "colossalai") return {};
  return {0, 0, 0, true};
}

void set_host_work(traces::Op& op, const HostWork& w) {
  for (int n : {w.hooks, w.eager_ops, w.copies})
    PROTWIN_CHECK(n >= 0 && n <= traces::HostWork::kMax, traces::describe_op(op), ": ", n,
                  " host calls (hooks, eager ops or copies) around one op; a plan holds at most ",
                  traces::HostWork::kMax, ": split the model's blocks into smaller ones");
  op.host = {static_cast<uint16_t>(w.hooks), static_cast<uint16_t>(w.eager_ops), static_cast<uint16_t>(w.copies)};
  op.host_sync = op.host_sync || w.sync;
}

void add_host_work(traces::Op& op, const HostWork& w) {
  set_host_work(op, {op.host.hooks + w.hooks, op.host.eager_ops + w.eager_ops, op.host.copies + w.copies, w.sync});
}

}  // namespace protwin::sim::offload
