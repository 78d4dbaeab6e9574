#include "sim/calib/rank_machine.h"

#include <string>

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

}  // namespace protwin::calib
