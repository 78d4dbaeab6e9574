#include "sim/calib/rank_machine.h"

#include <string>

#include "traces/error.h"

namespace protwin::calib {

hw::Machine machine_for_ranks(const hw::Machine& one_gpu, int ranks, double net_gbps) {
  nlohmann::json j = one_gpu.json;
  j["gpu"]["count"] = ranks;
  auto& intra = j["collectives"]["intra_node"];
  intra["host_staged"] = false;
  // A rank profile's fitted alpha and bus bandwidth are kept (measured under the same --net-GBps).
  const nlohmann::json& prov = j.value("provenance", nlohmann::json::object());
  const bool measured = prov.is_object() && prov.contains("/collectives") && prov["/collectives"].is_object() &&
                        prov["/collectives"].value("kind", "") == "measured";
  if (!measured)
    for (auto& [kind, c] : intra.items())
      if (c.is_object() && c.contains("busbw_GBps")) c["busbw_GBps"] = net_gbps;
  return hw::machine_from_json(j, one_gpu.source + " (" + std::to_string(ranks) + " ranks)");
}

nlohmann::json host_from_rank_share(nlohmann::json j, int ranks) {
  PROTWIN_CHECK(ranks >= 1, "host_from_rank_share: ranks must be >= 1, got ", ranks);
  for (const char* k : {"dram_GBps", "dram_peak_GBps"}) j["host"][k] = j["host"][k].get<double>() * ranks;
  if (j.contains("host_passes"))
    for (auto& [name, ns] : j["host_passes"].items())
      if (ns.is_number()) ns = ns.get<double>() / ranks;
  return j;
}

}  // namespace protwin::calib
