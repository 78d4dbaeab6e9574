// calibrate --ranks' machine prices a collective as the runtime runs it under mpirun
// (runtime/comm/rank_group.cpp): alpha + bus bytes / --net-GBps on its own, not staged over the
// rank's copy links. Oracle: the closed form of a ring all-gather's bus bytes ((N-1)/N of the
// gathered bytes) and the shipped emulated machine's alpha.
#include <catch2/catch.hpp>

#include "sim/calib/rank_machine.h"
#include "hwmodels/hardware_cost_model.h"
#include "traces/plan.h"

using namespace protwin;

namespace {
// A gpt2-tiny FSDP unit's all-gather on 2 ranks, as calibrate's 2-rank FSDP plan gathers it.
constexpr double kUnitBytes = 3159040;

hw::OpCost unit_all_gather(const hw::Machine& m) {
  traces::Plan plan;
  plan.gpus = 2;
  traces::Op op;
  op.kind = traces::OpKind::kAllGather;
  op.stream = "collective";
  op.work.bytes = static_cast<int64_t>(kUnitBytes);
  op.group.ranks = 2;
  return hw::HardwareCostModel(m).cost(op, plan);
}
}  // namespace

TEST_CASE("machine_for_ranks: a collective is its own transfer at --net-GBps, not over the copy links") {
  const hw::Machine one = hw::load_machine("host-emulated");
  REQUIRE(one.intra_node.host_staged);  // the profiled emulated machine's own description
  const hw::Machine two = calib::machine_for_ranks(one, 2, 1.0);
  CHECK(two.gpu.count == 2);
  CHECK_FALSE(two.intra_node.host_staged);

  const hw::OpCost c = unit_all_gather(two);
  CHECK(c.transfer() == nullptr);
  const double alpha_s = one.json.at("collectives").at("intra_node").at("all_gather").at("alpha_us").get<double>() * 1e-6;
  CHECK(c.stream_time().seconds() == Approx(alpha_s + kUnitBytes / 2 / 1e9).epsilon(1e-6));
}

TEST_CASE("machine_for_ranks: a rank profile's measured collectives keep their fitted alpha and bus bandwidth") {
  nlohmann::json j = hw::load_machine("host-emulated").json;
  j["collectives"]["intra_node"]["all_gather"] = {{"alpha_us", 123.0}, {"busbw_GBps", 0.7}};
  j["provenance"]["/collectives"] = {{"kind", "measured"}, {"source", "protwin profile (2 ranks)"}};
  const hw::Machine two = calib::machine_for_ranks(hw::machine_from_json(j, "measured"), 2, 1.0);
  CHECK_FALSE(two.intra_node.host_staged);
  // Closed form with the fitted line, not --net-GBps (1.0).
  CHECK(unit_all_gather(two).stream_time().seconds() == Approx(123e-6 + kUnitBytes / 2 / 0.7e9).epsilon(1e-6));
}

TEST_CASE("host_from_rank_share: a rank's measured DRAM share and host-pass times price its CPU work as measured") {
  // One rank measured 20 GB/s and 2 ns per element of an overflow scan while the other rank
  // measured beside it; per-core Adam fast enough that memory binds.
  nlohmann::json j = hw::load_machine("host-emulated").json;
  j["host"]["dram_GBps"] = 20.0;
  j["host"]["dram_peak_GBps"] = 20.0;
  j["host_passes"]["overflow_scan_ns_per_elem"] = 2.0;
  j["cpu_adam"] = {{"per_core_params_per_s", 1e12}, {"dram_efficiency", 1.0}, {"bytes_per_param", 28.0},
                   {"fixed_overhead_us", 0.0}, {"torch_slowdown", 1.0}};
  const nlohmann::json host = calib::host_from_rank_share(j, 2);
  CHECK(host["host"]["dram_GBps"].get<double>() == 40.0);
  CHECK(host["host_passes"]["overflow_scan_ns_per_elem"].get<double>() == 1.0);
  const hw::Machine two = calib::machine_for_ranks(hw::machine_from_json(host, "rank share"), 2, 1.0);
  traces::Plan plan;
  plan.gpus = 2;
  traces::Op adam;
  adam.kind = traces::OpKind::kAdamCpu;
  adam.stream = "cpu_optim";
  adam.work.params = 1'000'000;
  // Each of the host's 2 ranks gets half the host's 40 GB/s: the 20 GB/s this rank measured.
  CHECK(hw::HardwareCostModel(two).cost(adam, plan).stream_time().seconds() == Approx(1e6 * 28 / 20e9).epsilon(1e-9));
  traces::Op scan;
  scan.kind = traces::OpKind::kHostPass;
  scan.sub_kind = traces::OpSubKind::kOverflowScan;
  scan.stream = "cpu_optim";
  scan.work.bytes = 4'000'000;
  scan.work.params = 1'000'000;
  // max(bytes over the rank's 20 GB/s, elements x the 2 ns it measured).
  CHECK(hw::HardwareCostModel(two).cost(scan, plan).stream_time().seconds() == Approx(1e6 * 2e-9).epsilon(1e-9));
  CHECK_THROWS_WITH(calib::host_from_rank_share(j, 0), Catch::Contains("ranks must be >= 1"));
}
