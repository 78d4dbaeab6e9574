// What-if overrides and merging measured fragments into machines.
#include <catch2/catch.hpp>

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
  CHECK(m.gpu.compute.at("bf16").gemm_curve.last_y() == 300);
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
