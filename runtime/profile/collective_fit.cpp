#include "runtime/profile/collective_fit.h"

#include <algorithm>
#include <set>

#include "traces/error.h"

namespace protwin::rt {

std::map<std::string, CollectiveFit> fit_collectives(const std::vector<CollectiveRow>& rows) {
  std::map<std::string, std::vector<const CollectiveRow*>> by_kind;
  for (const CollectiveRow& r : rows) by_kind[r.kind].push_back(&r);
  std::map<std::string, CollectiveFit> fits;
  for (const auto& [kind, rs] : by_kind) {
    std::set<double> sizes;
    double mx = 0, my = 0;
    for (const CollectiveRow* r : rs) {
      sizes.insert(r->bus_bytes);
      mx += r->bus_bytes;
      my += r->seconds;
    }
    PROTWIN_CHECK(sizes.size() >= 2, "collective probe: ", kind, ": ", sizes.size(),
                  " distinct size(s), at least 2 are needed to fit alpha and the per-byte cost");
    mx /= static_cast<double>(rs.size());
    my /= static_cast<double>(rs.size());
    double sxy = 0, sxx = 0;
    for (const CollectiveRow* r : rs) {
      sxy += (r->bus_bytes - mx) * (r->seconds - my);
      sxx += (r->bus_bytes - mx) * (r->bus_bytes - mx);
    }
    const double slope = sxy / sxx;  // seconds per bus byte
    PROTWIN_CHECK(slope > 0, "collective probe: ", kind, ": the time does not grow with the bytes (slope ", slope,
                  " s/B); the machine was too loaded to measure, rerun it quietly");
    CollectiveFit f;
    f.alpha_us = std::max(0.0, (my - slope * mx) * 1e6);
    f.busbw_GBps = 1e-9 / slope;
    f.rows = static_cast<int>(rs.size());
    fits[kind] = f;
  }
  return fits;
}

}  // namespace protwin::rt
