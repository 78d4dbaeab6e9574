// The one op builder (sim/engine/op_builder.h): each maker sets the typed fields the cost model
// reads, a compute op's work is its kernels' closed-form sums, equal kernel sets are shared, and
// dependencies come out sorted without repeats or -1.
#include <catch2/catch.hpp>

#include "sim/engine/op_builder.h"
#include "traces/plan.h"

using namespace protwin;
using namespace protwin::sim;
using traces::OpKind;
using traces::OpSubKind;

namespace {
traces::Kernel kernel(const std::string& kind, int64_t n, double flops, double bytes, int64_t count = 1) {
  traces::Kernel k;
  k.sig = {kind, {n}, "fp16"};
  k.flops = flops;
  k.bytes = bytes;
  k.count = count;
  return k;
}
}  // namespace

TEST_CASE("op builder: a compute op's work is its kernels' sums, the kernels around add bytes only") {
  traces::Plan plan;
  const traces::KernelSet ks = {kernel("gemm", 8, 100, 10.5, 2), kernel("gelu", 8, 3, 7)};
  const traces::KernelSet around = {kernel("elementwise", 4, 50, 2.5, 3)};
  const traces::Op a = make_op::compute(plan, OpKind::kForward, "compute", ks, around);
  CHECK(a.kind == OpKind::kForward);
  CHECK(a.stream == "compute");
  CHECK(a.work.flops == 2 * 100 + 3);                 // `around` adds no flops
  CHECK(a.work.bytes == 28 + 7);                      // 2 x 10.5 + 7 = 28, then int64(3 x 2.5) = 7
  REQUIRE(plan.kernel_sets.size() == 1);
  CHECK(plan.kernels_of(a).size() == 3);              // the set holds the kernels around too
  // An equal set is shared; another gets the next index.
  CHECK(make_op::compute(plan, OpKind::kBackward, "compute", ks, around).kernels == a.kernels);
  CHECK(make_op::compute(plan, OpKind::kRecompute, "compute", ks).kernels == 1);
}

TEST_CASE("op builder: copies, collectives, sends, Adam and host work carry their typed fields") {
  const traces::Op h2d = make_op::copy(OpKind::kH2D, "h2d", 4096, OpSubKind::kParamChunk, true);
  CHECK((h2d.work.bytes == 4096 && h2d.sub_kind == OpSubKind::kParamChunk && h2d.pinned == true));
  CHECK(make_op::copy(OpKind::kD2H, "d2h", 1, OpSubKind::kGradFp32, false).pinned == false);
  const traces::Op ag = make_op::collective(OpKind::kAllGather, "collective", 1 << 20, {8, 4, 1, false}, true);
  CHECK((ag.group.ranks == 8 && ag.group.ranks_per_node == 4 && ag.group.groups_per_node == 1 && ag.host_sync));
  // A send pairs two ranks: on one node both are there, across nodes one per node.
  const traces::Op intra = make_op::send_recv("p2p", 64, false), inter = make_op::send_recv("p2p", 64, true);
  CHECK((intra.kind == OpKind::kSendRecv && intra.group.ranks == 2 && intra.group.ranks_per_node == 2 &&
         !intra.group.inter_node));
  CHECK((inter.group.ranks_per_node == 1 && inter.group.inter_node && !inter.host_sync));
  const traces::Op adam = make_op::adam_device("compute", 1000, 18);
  CHECK((adam.kind == OpKind::kAdamDevice && adam.work.params == 1000 && adam.bytes_per_param == 18));
  const traces::Op scan = make_op::host(OpKind::kHostPass, "cpu_optim", 10, 40, OpSubKind::kOverflowScan);
  CHECK((scan.work.params == 10 && scan.work.bytes == 40 && scan.sub_kind == OpSubKind::kOverflowScan));
  // Each maker's sub-kind fits its kind, as a plan reader checks.
  for (const traces::Op* op : {&h2d, &scan}) CHECK(traces::sub_kind_fits(op->kind, op->sub_kind));
}

TEST_CASE("op builder: ops get dense ids, normalised deps, their place and memory effects") {
  traces::Plan plan;
  OpBuilder b(plan);
  const int t = b.tensor("act.layer0", 512, traces::TensorKind::kActivation, "", "fp32");
  CHECK((t == 0 && plan.tensors[0].dtype == "fp32" && plan.tensors[0].bytes.n == 512));
  const int first = b.add(make_op::copy(OpKind::kH2D, "h2d", 8, OpSubKind::kActivation, true), {});
  const int second = b.add(make_op::adam_device("compute", 1), {first, -1, first}, 3, 7);
  CHECK((first == 0 && second == 1));
  CHECK(b.op(second).deps == std::vector<int>{0});
  CHECK((b.op(second).block == 3 && b.op(second).chunk == 7));
  b.transient(second, "gpu", 100);
  b.mem(second, "gpu", 0, traces::MemAt::kEnd);  // nothing
  REQUIRE(b.op(second).mem.size() == 2);
  CHECK((b.op(second).mem[0].delta_bytes == 100 && b.op(second).mem[0].at == traces::MemAt::kStart));
  CHECK((b.op(second).mem[1].delta_bytes == -100 && b.op(second).mem[1].at == traces::MemAt::kEnd));
  std::vector<int> deps = {5, -1, 2, 5, 2};
  normalise_deps(deps);
  CHECK(deps == std::vector<int>{2, 5});
}
