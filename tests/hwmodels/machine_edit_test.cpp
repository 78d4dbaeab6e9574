// What-if overrides and merging measured fragments into machines.
#include <catch2/catch.hpp>

#include <functional>

#include "hwmodels/machine.h"
#include "hwmodels/machine_edit.h"
#include "traces/error.h"
#include "traces/json_reader.h"

using namespace protwin;
using namespace protwin::hw;

namespace {
nlohmann::json embedded(const std::string& name) {
  return traces::JsonDocument::parse(embedded_machine_json(name), name).json();
}
}  // namespace

TEST_CASE("a what-if override (--set) replaces a field and marks it assumed", "[hwmodels]") {
  const Machine m = load_machine("a100-server", {"host_link.h2d.pinned_GBps=32", "gpu.p2p=false",
                                                 "gpu.compute.bf16.gemm_curve.tflops.5=300"});
  CHECK(m.host_link.h2d.pinned_GBps == 32);
  CHECK_FALSE(m.gpu.p2p);
  CHECK(m.gpu.compute.at("bf16").gemm_curve.ys().back() == 300);
  CHECK(m.provenance_of("/host_link/h2d/pinned_GBps") ==
        nlohmann::json({{"kind", "assumed"}, {"source", "--set host_link.h2d.pinned_GBps=32"}}));
  // The JSON round-trips: loading the dumped document gives the same machine.
  CHECK(machine_from_json(nlohmann::json::parse(m.json.dump()), "x.json").json == m.json);
}

TEST_CASE("an override of a field that does not exist names it and the nearest keys", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  CHECK_THROWS_WITH(apply_override(j, "host_link.h2d.pinnd_GBps=32"),
                    "--set host_link.h2d.pinnd_GBps: no field \"pinnd_GBps\" in host_link.h2d; "
                    "nearest: pinned_GBps, pageable_GBps, pinned_latency_us");
  CHECK_THROWS_WITH(apply_override(j, "hostlink.h2d=3"),
                    "--set hostlink.h2d: no field \"hostlink\" in the machine; nearest: host_link, "
                    "host, format");
  CHECK_THROWS_WITH(apply_override(j, "host_link.h2d.pinned_GBps=fast"),
                    "--set host_link.h2d.pinned_GBps: expected a number, got \"fast\"");
  CHECK_THROWS_WITH(apply_override(j, "host_link.h2d.pinned_GBps"),
                    "--set host_link.h2d.pinned_GBps: expected path=value, e.g. "
                    "host_link.h2d.pinned_GBps=32");
  CHECK_THROWS_WITH(apply_override(j, "gpu.hbm.curve.bytes.9=1"),
                    "--set gpu.hbm.curve.bytes.9: gpu.hbm.curve.bytes is an array of 5 values; "
                    "expected an index 0..4, got \"9\"");
}

TEST_CASE("merge folds a measured fragment in and replaces its provenance", "[hwmodels]") {
  const nlohmann::json base = embedded("rtx3090-server");
  const nlohmann::json fragment = {
      {"host_link", {{"h2d", {{"pinned_GBps", 11.2}}}}},
      {"provenance", {{"/host_link/h2d/pinned_GBps", {{"kind", "measured"}, {"source", "protwin probe"}}}}}};
  const nlohmann::json merged = merge_machine_json(base, fragment, "probe.json");
  const Machine m = machine_from_json(merged, "merged.json");
  CHECK(m.host_link.h2d.pinned_GBps == 11.2);
  CHECK(m.host_link.d2h.pinned_GBps == 13.0);  // untouched
  CHECK(m.provenance_of("/host_link/h2d/pinned_GBps")["source"] == "protwin probe");
  CHECK(m.provenance_of("/host_link/d2h/pinned_GBps")["kind"] == "derived");

  const nlohmann::json bare = {{"host_link", {{"h2d", {{"pinned_GBps", 11.2}}}}}};
  CHECK_THROWS_WITH(merge_machine_json(base, bare, "probe.json"),
                    "probe.json:/host_link/h2d/pinned_GBps: merged value has no provenance entry in "
                    "the fragment");
}

TEST_CASE("what-if overrides take finite numbers, booleans and strings", "[hwmodels][errors]") {
  nlohmann::json j = embedded("a100-server");
  const std::pair<const char*, const char*> refused[] = {
      {"host_link.h2d.pinned_GBps=inf", "--set host_link.h2d.pinned_GBps: expected a finite number, got \"inf\""},
      {"host_link.h2d.pinned_GBps=nan", "--set host_link.h2d.pinned_GBps: expected a finite number, got \"nan\""},
      {"gpu.hbm.curve.bytes=1", "--set gpu.hbm.curve.bytes: is an array of 5 values; set one of them: "
                                "gpu.hbm.curve.bytes.0 .. gpu.hbm.curve.bytes.4"}};
  for (const auto& [assignment, message] : refused) CHECK_THROWS_WITH(apply_override(j, assignment), message);
  apply_override(j, "gpu.name=Renamed GPU");
  const Machine m = machine_from_json(j, "x.json");
  CHECK(m.gpu.name == "Renamed GPU");
  CHECK(m.provenance_of("/gpu/name")["source"] == "--set gpu.name=Renamed GPU");
  // Strings with a fixed set of values are checked when the machine is read; the error names the
  // --set that put the value there, then its pointer.
  CHECK_THROWS_WITH(load_machine("dgx-a100", {"collectives.intra_node.fabric=ring"}),
                    "--set collectives.intra_node.fabric=ring: /collectives/intra_node/fabric: expected \"switch\" or "
                    "\"mesh\", got \"ring\"");
  // An error elsewhere than the fields set names every --set.
  CHECK_THROWS_WITH(load_machine("dgx-a100", {"gpu.name=X", "collectives.intra_node.fabric=ring"}),
                    "--set collectives.intra_node.fabric=ring: /collectives/intra_node/fabric: expected \"switch\" or "
                    "\"mesh\", got \"ring\"");
}

TEST_CASE("a machine's unknown fields and counts out of range are refused with the pointer", "[hwmodels][errors]") {
  // The error reading a100-server with one edit.
  auto error_with = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = embedded("a100-server");
    edit(j);
    try {
      machine_from_json(j, "x.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // Provenance does not make a field known.
  CHECK(error_with([](nlohmann::json& j) {
          j["gpu"]["bogus_field"] = 3;
          j["provenance"]["/gpu/bogus_field"] = {{"kind", "measured"}, {"source", "test"}};
        }) == "x.json:/gpu: unknown field \"bogus_field\" (known: allocator, attention, compute, count, "
              "hbm, kernel_floor_us, launch_floor_us, memory_bytes, name, p2p, sms, "
        "usable_memory_bytes)");
  CHECK(error_with([](nlohmann::json& j) { j["host_link"]["size_curve"]["note"] = "x"; }) ==
        "x.json:/host_link/size_curve: unknown field \"note\" (known: bytes, fraction)");
  CHECK(error_with([](nlohmann::json& j) { j["gpu"]["count"] = int64_t{1} << 31; }) ==
        "x.json:/gpu/count: expected an integer <= 4096, got integer 2147483648");
  CHECK(error_with([](nlohmann::json& j) { j["gpu"]["count"] = 0; }) ==
        "x.json:/gpu/count: expected an integer >= 1, got integer 0");
  // Every shipped machine passes.
  for (const auto& name : machine_names()) CHECK_NOTHROW(load_machine(name));
}

TEST_CASE("merge leaves a probe fragment's header and raw measurements out", "[hwmodels]") {
  const nlohmann::json base = embedded("rtx3090-server");
  const nlohmann::json fragment = {
      {"format", "protwin.machine-fragment"},
      {"version", 1},
      {"generator", "protwin-probe"},
      {"raw", {{"hbm", {1, 2, 3}}}},
      {"gpu", {{"launch_floor_us", 3.5}}},
      {"provenance", {{"/gpu/launch_floor_us", {{"kind", "measured"}, {"source", "protwin probe"}}}}}};
  const nlohmann::json merged = merge_machine_json(base, fragment, "probe.json");
  CHECK_FALSE(merged.contains("raw"));
  CHECK_FALSE(merged.contains("generator"));
  CHECK(merged["format"] == "protwin.machine");
  CHECK(machine_from_json(merged, "merged.json").gpu.launch_floor_us == 3.5);
}
