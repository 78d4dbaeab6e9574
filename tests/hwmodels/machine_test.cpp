// Machines as data: every embedded machine validates; bad files fail naming file + JSON pointer.
#include <catch2/catch.hpp>

#include <fstream>

#include "hwmodels/machine.h"
#include "traces/error.h"
#include "traces/json_reader.h"

using namespace protwin;
using namespace protwin::hw;

namespace {
nlohmann::json embedded(const std::string& name) {
  return traces::JsonDocument::parse(embedded_machine_json(name), name).json();
}
}  // namespace

TEST_CASE("the eleven machines are embedded and validate", "[hwmodels]") {
  const std::vector<std::string> expected = {"a100-40g-pcie-server", "a100-80g-pcie-server", "a100-server", "abci-a100",
                                             "dgx-a100", "h100-server", "h200-server", "hgx-h100",
                                             "host-emulated", "rtx3090-server", "tsubame-h100"};
  CHECK(machine_names() == expected);
  for (const auto& name : expected) {
    INFO(name);
    const Machine m = load_machine(name);
    CHECK(m.name == name);
    CHECK(m.json == embedded(name));  // raw JSON kept for --json round trips
  }
}

TEST_CASE("machine facts match the ProTrain testbeds (hardware.md §1)", "[hwmodels]") {
  const Machine r = load_machine("rtx3090-server");
  CHECK(r.gpu.count == 4);
  CHECK_FALSE(r.gpu.p2p);
  CHECK(r.intra_node.host_staged);
  CHECK(r.host.cores == 24);
  CHECK(r.host_link.peak_GBps == 15.75);
  const Machine a = load_machine("a100-server");
  CHECK(a.gpu.count == 4);
  CHECK(a.gpu.memory_bytes == 80LL * 1024 * 1024 * 1024);
  CHECK(a.host.cores == 112);
  CHECK(a.inter_node.has_value());
  for (const char* n : {"a100-40g-pcie-server", "a100-80g-pcie-server", "h100-server", "h200-server"})
    CHECK(load_machine(n).gpu.count == 8);
  // The A100 80GB PCIe (issue #18): its own HBM and memory, not the SXM part's (A100DS, NeuSight's
  // device config: 1935 GB/s, 108 SMs).
  const Machine p = load_machine("a100-80g-pcie-server");
  CHECK(p.gpu.hbm_peak_GBps == 1935);
  CHECK(p.gpu.sms == 108);
  CHECK(p.gpu.memory_bytes == 80LL * 1024 * 1024 * 1024);
  CHECK(a.provenance_of("/host_link/h2d/pinned_GBps")["kind"] == "measured");
  CHECK(a.provenance_of("/collectives/intra_node/all_reduce/busbw_GBps")["kind"] == "derived");
}

TEST_CASE("an unknown machine lists the known ones", "[hwmodels][errors]") {
  CHECK_THROWS_WITH(load_machine("dgx-9000"),
                    "unknown machine 'dgx-9000'; known machines: a100-40g-pcie-server, a100-80g-pcie-server, a100-server, "
                    "abci-a100, dgx-a100, h100-server, h200-server, hgx-h100, host-emulated, "
                    "rtx3090-server, tsubame-h100\n"
                    "hint: pass a path to a machine file (with '/' or ending in .json) to load one "
                    "from disk");
}

TEST_CASE("a machine of another format or version is refused naming the member", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  j["version"] = 2;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/version: unsupported machine version 2 (this protwin reads version 1)");
  j = embedded("a100-server");
  j["format"] = "protwin.plan";
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/format: expected \"protwin.machine\", got \"protwin.plan\"");
}

TEST_CASE("a missing field names the file and JSON pointer", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  j["host_link"]["h2d"].erase("pinned_GBps");
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/host_link/h2d: missing required field \"pinned_GBps\"");
}

TEST_CASE("a negative value names the file and JSON pointer", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  j["host_link"]["h2d"]["pinned_GBps"] = -3.5;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/host_link/h2d/pinned_GBps: expected a number > 0, got number -3.5");
  j = embedded("a100-server");
  j["gpu"]["allocator"]["cuda_free_us"] = -1;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/gpu/allocator/cuda_free_us: expected a number >= 0, got integer -1");
  j = embedded("host-emulated");
  j["host_passes"]["overflow_scan_ns_per_elem"] = -0.5;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/host_passes/overflow_scan_ns_per_elem: expected a number >= 0, got number -0.5");
}

TEST_CASE("a machine file on disk is read and errors name its path", "[hwmodels][errors]") {
  nlohmann::json j = embedded("rtx3090-server");
  j["cpu_adam"].erase("bytes_per_param");
  const std::string path = std::string(PROTWIN_BINARY_DIR) + "/test_hwmodels_bad_machine.json";
  std::ofstream(path) << j.dump(1);
  CHECK_THROWS_WITH(load_machine(path),
                    path + ":/cpu_adam: missing required field \"bytes_per_param\"");
}

TEST_CASE("every number needs a provenance entry with a known kind", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  j["provenance"].erase("/gpu/memory_bytes");
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/gpu/memory_bytes: no provenance entry\nhint: add \"/gpu/memory_bytes\": "
                    "{\"kind\": \"peak|measured|proxy|derived|assumed\", \"source\": \"...\"} to /provenance");
  j = embedded("a100-server");
  j["provenance"]["/gpu/memory_bytes"]["kind"] = "guess";
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/provenance/~1gpu~1memory_bytes/kind: expected one of peak, measured, "
                    "proxy, derived, assumed, got \"guess\"");
  j = embedded("a100-server");
  j["provenance"]["/gpu/no_such"] = {{"kind", "peak"}, {"source", "x"}};
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/provenance/~1gpu~1no_such: points to nothing in the machine");
}

TEST_CASE("curves must increase in x and have one y per x", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  j["gpu"]["compute"]["bf16"]["gemm_curve"]["gflop"][2] = 0.1;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/gpu/compute/bf16/gemm_curve/gflop/2: expected points in strictly "
                    "increasing order");
  j = embedded("a100-server");
  j["gpu"]["hbm"]["curve"]["GBps"].erase(0);
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/gpu/hbm/curve/GBps: expected 5 values (one per bytes point), got 4");
}

TEST_CASE("cluster node facts match issue #9 and hardware.md", "[hwmodels]") {
  // Oracle: issue #9's node list; A100DS / TSUBAME 4.0 specs for memory and HBM.
  struct Node {
    const char* name;
    int gpus;
    int64_t memory_bytes;
    double hbm_peak_GBps;
    int nics;
    double nic_Gbps;
    IntraFabric fabric;
  };
  const Node nodes[] = {
      {"abci-a100", 8, 40LL << 30, 1555, 4, 200, IntraFabric::kSwitch},
      {"dgx-a100", 8, 80LL << 30, 2039, 8, 200, IntraFabric::kSwitch},
      {"tsubame-h100", 4, 95830LL << 20, 2396, 4, 200, IntraFabric::kMesh},
      {"hgx-h100", 8, 80LL << 30, 3350, 8, 400, IntraFabric::kSwitch},
  };
  for (const Node& n : nodes) {
    INFO(n.name);
    const Machine m = load_machine(n.name);
    CHECK(m.gpu.count == n.gpus);
    CHECK(m.gpu.memory_bytes == n.memory_bytes);
    CHECK(m.gpu.hbm_peak_GBps == n.hbm_peak_GBps);
    REQUIRE(m.network.has_value());
    CHECK(m.network->nics_per_node == n.nics);
    CHECK(m.network->nic_Gbps == n.nic_Gbps);
    CHECK(m.intra_node.fabric == n.fabric);
    CHECK(m.intra_node.send_recv.has_value());
    CHECK_FALSE(m.inter_node.has_value());
    // Every new number has a provenance entry of its own section.
    for (const char* p : {"/network/nics_per_node", "/network/nic_Gbps", "/network/efficiency",
                          "/network/hop_latency_us", "/network/send_recv_alpha_us",
                          "/collectives/intra_node/send_recv/GBps",
                          "/collectives/intra_node/send_recv/alpha_us"})
      CHECK(m.provenance_of(p).value("source", "") != "");
  }
  // NVIDIA/nccl-tests#119 (hardware.md §2.2): 4 x HDR nodes reach 84.8 of 100 GB/s busbw.
  CHECK(load_machine("abci-a100").network->node_GBps() == Approx(85.0));
  CHECK(load_machine("abci-a100").provenance_of("/network/efficiency")["kind"] == "measured");
}

TEST_CASE("network and fabric fields are validated with file and pointer", "[hwmodels][errors]") {
  nlohmann::json j = embedded("abci-a100");
  j["network"]["efficiency"] = 1.5;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/network/efficiency: expected a fraction in (0, 1]");
  j = embedded("abci-a100");
  j["network"]["nics_per_node"] = 0;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/network/nics_per_node: expected an integer >= 1, got integer 0");
  j = embedded("abci-a100");
  j["network"].erase("nic_Gbps");
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/network: missing required field \"nic_Gbps\"");
  j = embedded("tsubame-h100");
  j["collectives"]["intra_node"]["fabric"] = "torus";
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/collectives/intra_node/fabric: expected \"switch\" or \"mesh\", got \"torus\"");
  j = embedded("hgx-h100");
  j["collectives"]["intra_node"]["send_recv"]["GBps"] = 0;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/collectives/intra_node/send_recv/GBps: expected a number > 0, got integer 0");
}

TEST_CASE("ring channels: NCCL 2.18's counts, refused when negative or not below the SMs", "[hwmodels][errors]") {
  // src/graph/search.cc + connect.cc at v2.18.1-1: 6 search channels doubled twice on both nodes.
  CHECK(machine_from_json(embedded("hgx-h100"), "h.json").intra_node.ring_channels == 24);
  CHECK(machine_from_json(embedded("dgx-a100"), "d.json").intra_node.ring_channels == 24);
  CHECK(machine_from_json(embedded("rtx3090-server"), "r.json").intra_node.ring_channels == 0);  // not known
  nlohmann::json j = embedded("hgx-h100");
  j["collectives"]["intra_node"]["ring_channels"] = -1;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    Catch::Contains("bad.json:/collectives/intra_node/ring_channels: expected an integer"));
  j["collectives"]["intra_node"]["ring_channels"] = 132;
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/collectives/intra_node/ring_channels: must be below /gpu/sms (132): a "
                    "collective's CTAs cannot take every SM");
  j["collectives"]["intra_node"]["ring_channels"] = 24;
  j["gpu"].erase("sms");
  CHECK_THROWS_WITH(machine_from_json(j, "bad.json"),
                    "bad.json:/collectives/intra_node/ring_channels: needs /gpu/sms, the GPU's SM count that the "
                    "channels take a share of");
}
