#include "cli/summary.h"

#include "cli/progress.h"

namespace protwin::cli {

namespace {
double utilization(const traces::StreamRecord& s, const traces::Report& r) {
  return r.iteration.ns > 0 ? static_cast<double>(s.busy.ns) / static_cast<double>(r.iteration.ns) : 0.0;
}
}  // namespace

nlohmann::json report_summary_json(const traces::Report& r) {
  nlohmann::json streams = nlohmann::json::array(), pools = nlohmann::json::array();
  for (const auto& s : r.streams)
    streams.push_back({{"name", s.name}, {"busy_s", s.busy.seconds()}, {"utilization", utilization(s, r)},
                       {"ops", s.ops}});
  for (const auto& p : r.pools)
    pools.push_back({{"name", p.name}, {"peak_bytes", p.peak.n}, {"capacity_bytes", p.capacity.n},
                     {"peak_at_s", p.peak_at.seconds()}});
  return {{"iteration_s", r.iteration.seconds()}, {"ops", r.ops.size()}, {"streams", streams},
          {"pools", pools}, {"priced_by", r.priced_by}};
}

void print_report_summary(std::ostream& os, const traces::Report& r) {
  os << format("iteration time: %.6f s (%zu ops)\n\n", r.iteration.seconds(), r.ops.size());
  os << "stream          busy (s)     utilization   ops\n";
  for (const auto& s : r.streams)
    os << format("%-14s %10.6f %12.1f %% %6lld\n", s.name.c_str(), s.busy.seconds(), 100.0 * utilization(s, r),
                 static_cast<long long>(s.ops));
  os << "\npool            peak (MiB)   capacity (MiB)   peak at (s)\n";
  for (const auto& p : r.pools)
    os << format("%-14s %11.1f %16.1f %13.6f\n", p.name.c_str(), static_cast<double>(p.peak.n) / 1048576.0,
                 static_cast<double>(p.capacity.n) / 1048576.0, p.peak_at.seconds());
  os << "\n" << priced_by_line(r.priced_by);
}

std::string priced_by_line(const std::map<std::string, int64_t>& priced_by) {
  return "ops priced by:" + (priced_by.empty() ? "" : " " + counts_text(priced_by)) + "\n";
}

std::string counts_text(const std::map<std::string, int64_t>& counts) {
  std::string s;
  for (const auto& [key, n] : counts) s += (s.empty() ? "" : ", ") + key + " " + std::to_string(n);
  return s;
}

}  // namespace protwin::cli
