// HardwareCostModel against measurements (hardware.md) and closed forms.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "hwmodels/hardware_cost_model.h"
#include "traces/plan.h"

using namespace protwin;
using namespace protwin::hw;

TEST_CASE("A100-SXM4-80GB bf16 GEMM 8192^3 is within 5% of the measured 264.5 TFLOPS", "[hwmodels]") {
  // Oracle: ZZC torch.mm database, A100-SXM4-80GB bf16 max 264.5 TFLOPS (hardware.md §2.2).
  const HardwareCostModel cm(load_machine("a100-server"));
  const double t = cm.gemm_time(1, 8192, 8192, 8192, "bf16").seconds;
  CHECK(2.0 * 8192 * 8192 * 8192 / t / 1e12 == Approx(264.5).epsilon(0.05));
}

TEST_CASE("GEMM efficiency is interpolated in log GFLOP between measured points", "[hwmodels]") {
  // Closed form: halfway in log10 between (17.2, 205) and (137.4, 255) on the A100 bf16 curve.
  const HardwareCostModel cm(load_machine("a100-server"));
  const double mid = std::sqrt(17.2 * 137.4);
  CHECK(cm.gemm_tflops(mid, "bf16") == Approx(230.0));
  CHECK(cm.gemm_tflops(5000, "bf16") == Approx(264.5));   // above the curve: sustained
}

TEST_CASE("pinned H2D of 1 GiB on a100-server runs at 25 GB/s +-5%", "[hwmodels]") {
  // Oracle: nvbandwidth #42, A100-SXM4 host_to_device 25.13 GB/s at 0.5-1 GiB (hardware.md §2.2).
  const HardwareCostModel cm(load_machine("a100-server"));
  const double bytes = 1024.0 * 1024 * 1024;
  const double t = cm.copy_seconds(bytes, CopyDirection::kH2D, true, false);
  CHECK(bytes / t / 1e9 == Approx(25.0).epsilon(0.05));
  // Closed form: latency + bytes / (rate x size fraction x duplex fraction).
  CHECK(cm.copy_seconds(bytes, CopyDirection::kH2D, true, true) ==
        Approx(3e-6 + bytes / (25.1 * 1.0 * 0.45 * 1e9)));
  CHECK(cm.copy_seconds(bytes, CopyDirection::kD2H, false, false) == Approx(20e-6 + bytes / 11e9));
}

TEST_CASE("collectives follow alpha + (n-1)/n S / busbw and 2(n-1)/n for all-reduce", "[hwmodels]") {
  const Machine m = load_machine("a100-server");
  const HardwareCostModel cm(m);
  const double S = 256.0 * 1024 * 1024;
  const int n = 4;
  const auto& ic = m.intra_node;
  CHECK(cm.collective_time(CollectiveKind::kAllGather, S, n).seconds ==
        Approx(ic.all_gather.alpha_us * 1e-6 + 0.75 * S / (ic.all_gather.busbw_GBps * 1e9)));
  CHECK(cm.collective_time(CollectiveKind::kReduceScatter, S, n).seconds ==
        Approx(ic.reduce_scatter.alpha_us * 1e-6 + 0.75 * S / (ic.reduce_scatter.busbw_GBps * 1e9)));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, n).seconds ==
        Approx(ic.all_reduce.alpha_us * 1e-6 + 1.5 * S / (ic.all_reduce.busbw_GBps * 1e9)));
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, 1).seconds == 0);
  CHECK(cm.collective_time(CollectiveKind::kAllReduce, S, n, CollectiveScope::kInterNode).seconds ==
        Approx(30e-6 + 1.5 * S / 11e9));
  const HardwareCostModel single(load_machine("rtx3090-server"));
  CHECK_THROWS_WITH(single.collective_time(CollectiveKind::kAllReduce, S, 8, CollectiveScope::kInterNode).seconds,
                    "machine rtx3090-server: no /collectives/inter_node entry for an inter-node collective");
}

TEST_CASE("CPU Adam is min(cores x per-core rate, efficiency x DRAM / bytes per param)", "[hwmodels]") {
  // rtx3090-server: 24 x 5e7 = 1.2e9 < 0.25 x 150e9 / 28 = 1.34e9  -> compute-bound.
  const HardwareCostModel a(load_machine("rtx3090-server"));
  CHECK(a.cpu_adam_params_per_s() == Approx(24 * 5e7));
  // a100-server: 112 x 5e7 = 5.6e9 > 0.25 x 372e9 / 28 = 3.32e9   -> DRAM-bound.
  const HardwareCostModel b(load_machine("a100-server"));
  CHECK(b.cpu_adam_params_per_s() == Approx(0.25 * 372e9 / 28));
  // Four ranks share one host's cores and DRAM.
  CHECK(b.cpu_adam_params_per_s(4) == Approx(0.25 * 372e9 / 28 / 4));
  CHECK(a.cpu_adam_seconds(1e9) == Approx(1000e-6 + 1e9 / 1.2e9));
  CHECK(a.cpu_adam_seconds(0) == 0);
}

TEST_CASE("a host pass costs the slower of the DRAM bound and its measured per-element cost", "[hwmodels]") {
  // rtx3090-server has no host_passes measurement: the DRAM bound alone (150 GB/s shared by ranks).
  const HardwareCostModel a(load_machine("rtx3090-server"));
  CHECK(a.host_pass_seconds(traces::OpSubKind::kOverflowScan, 8e9, 1e9) == Approx(8e9 / 150e9));
  CHECK(a.host_pass_seconds(traces::OpSubKind::kUnscale, 8e9, 1e9, 4) == Approx(8e9 / (150e9 / 4)));
  // host-emulated measured them: ns per element with the whole host, each rank with its share.
  const Machine m = load_machine("host-emulated");
  REQUIRE(m.host_passes.overflow_scan_ns_per_elem > 0);
  const HardwareCostModel b(m);
  const double elems = 1e8, dram = m.host.dram_GBps * 1e9;
  for (const auto& [what, ns, bytes] : {std::tuple{traces::OpSubKind::kOverflowScan, m.host_passes.overflow_scan_ns_per_elem, 8.0},
                                        {traces::OpSubKind::kUnscale, m.host_passes.unscale_ns_per_elem, 8.0},
                                        {traces::OpSubKind::kFp16Copy, m.host_passes.fp16_copy_ns_per_elem, 6.0}}) {
    INFO(traces::to_string(what));
    CHECK(b.host_pass_seconds(what, bytes * elems, elems) == Approx(std::max(bytes * elems / dram, elems * ns * 1e-9)));
    CHECK(b.host_pass_seconds(what, bytes * elems, elems, 2) ==
          Approx(std::max(bytes * elems / (dram / 2), 2 * elems * ns * 1e-9)));
  }
  // The plan op reads what/params/bytes.
  traces::Plan plan;
  plan.gpus = 1;
  traces::Op op;
  op.kind = traces::OpKind::kHostPass;
  op.stream = "cpu_optim";
  op.work.params = 1000000;
  op.work.bytes = 8000000;
  op.sub_kind = traces::OpSubKind::kOverflowScan;
  CHECK(b.cost(op, plan).stream_time() == from_seconds(b.host_pass_seconds(traces::OpSubKind::kOverflowScan, 8e6, 1e6)));
  op.sub_kind = traces::OpSubKind::kNone;
  CHECK_THROWS_WITH(b.cost(op, plan), "host_pass: sub-kind \"\": expected overflow_scan, unscale, fp16_copy");
}

TEST_CASE("device Adam and memory-bound kernels use the HBM curve with a launch floor", "[hwmodels]") {
  const HardwareCostModel cm(load_machine("a100-server"));
  // 1 GiB moved: beyond the last curve point (1073741824 B, 1800 GB/s).
  CHECK(cm.memory_seconds(1073741824.0) == Approx(1073741824.0 / 1800e9));
  CHECK(cm.memory_seconds(1000) == Approx(7.3e-6));  // the launch floor
  CHECK(cm.device_adam_seconds(1e9) == Approx(32e9 / 1800e9));
}

namespace {
traces::Op make_op(const std::string& kind, int64_t bytes) {
  traces::Op op;
  op.kind = traces::op_kind_named(kind);
  op.stream = kind;
  op.work.bytes = bytes;
  return op;
}
}  // namespace

TEST_CASE("plan copies use the PCIe direction link plus the shared duplex link", "[hwmodels]") {
  const HardwareCostModel cm(load_machine("a100-server"));
  const auto links = cm.links();
  REQUIRE(links.size() == 3);
  CHECK(links[HardwareCostModel::kLinkH2D].GBps == Approx(25.1));
  CHECK(links[HardwareCostModel::kLinkD2H].GBps == Approx(26.0));
  CHECK(links[HardwareCostModel::kLinkDuplex].GBps == Approx(0.45 * 25.1 + 1.0 * 26.0));
  traces::Plan plan;
  const OpCost c = cm.cost(make_op("h2d", 64 << 20), plan);
  CHECK(c.stream_time() == SimTime(3000));
  REQUIRE(c.transfer() != nullptr);
  CHECK(c.transfer()->n_links() == 2);
  CHECK(c.transfer()->links[0] == HardwareCostModel::kLinkH2D);
  CHECK(c.transfer()->links[1] == HardwareCostModel::kLinkDuplex);
  CHECK(c.transfer()->bytes == Approx(64 << 20));
  CHECK(c.transfer()->max_GBps == Approx(25.1));
  traces::Op pageable = make_op("d2h", 64 << 20);
  pageable.pinned = false;
  const OpCost p = cm.cost(pageable, plan);
  CHECK(p.stream_time() == SimTime(20000));
  CHECK(p.transfer()->max_GBps == Approx(11.0));
}

TEST_CASE("host-staged collectives load the PCIe links, NVLink ones do not", "[hwmodels]") {
  traces::Plan plan;
  plan.gpus = 4;
  const traces::Op op = make_op("all_gather", 64 << 20);
  const HardwareCostModel geforce(load_machine("rtx3090-server"));
  const OpCost g = geforce.cost(op, plan);
  CHECK(g.stream_time() == SimTime(30000));
  REQUIRE(g.transfer() != nullptr);
  CHECK(g.transfer()->n_links() == 3);
  CHECK(g.transfer()->bytes == Approx(0.75 * (64 << 20)));
  CHECK(g.transfer()->max_GBps == Approx(6.0));
  const HardwareCostModel nvlink(load_machine("a100-server"));
  const OpCost n = nvlink.cost(op, plan);
  CHECK(n.transfer() == nullptr);
  CHECK(n.stream_time().ns == Approx((12e-6 + 0.75 * (64 << 20) / 190e9) * 1e9).margin(1));
}

TEST_CASE("a measured op profile wins over the curves", "[hwmodels]") {
  const traces::OpSignature hit{"gemm", {4096, 4096, 4096}, "bf16"};
  HardwareCostModel cm(load_machine("a100-server"), [hit](const traces::OpSignature& s) -> std::optional<double> {
    if (s == hit) return 1.5e-3;
    return std::nullopt;
  });
  traces::Kernel k;
  k.sig = hit;
  CHECK(cm.kernel_time(k).seconds == 1.5e-3);
  k.sig.shape = {2048, 2048, 2048};
  CHECK(cm.kernel_time(k).seconds != 1.5e-3);
  // In a plan op, kernels' counts multiply.
  traces::Op op = make_op("forward", 0);
  k.sig = hit;
  k.count = 3;
  traces::Plan plan;
  op.kernels = plan.add_kernel_set({k});
  CHECK(cm.cost(op, plan).stream_time().ns == Approx(4.5e6).margin(1));
}
