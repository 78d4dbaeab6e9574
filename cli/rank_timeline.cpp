#include "cli/rank_timeline.h"

#include <algorithm>
#include <string>

#include "traces/error.h"
#include "traces/kernel_kinds.h"

namespace protwin::cli {

nlohmann::json rank_breakdown(const std::vector<traces::Report>& reps) {
  nlohmann::json out = nlohmann::json::array();
  if (reps.empty()) return out;
  const size_t n = reps[0].ops.size();
  std::vector<int64_t> base;
  for (size_t k = 0; k < reps.size(); ++k) {
    const traces::Report& r = reps[k];
    PROTWIN_CHECK(r.ops.size() == n, "rank ", k, "'s report has ", r.ops.size(), " ops, rank 0's ", n,
                  ": not the same plan");
    PROTWIN_CHECK(r.meta.contains("steady_start_ns") && r.meta["steady_start_ns"].is_number_integer(), "rank ", k,
                  "'s report has no meta.steady_start_ns (written by protwin train --rank-reports)");
    base.push_back(r.meta["steady_start_ns"].get<int64_t>());
  }
  for (size_t k = 0; k < reps.size(); ++k) {
    const traces::Report& r = reps[k];
    nlohmann::json busy = nlohmann::json::object();
    for (const auto& st : r.streams) busy[st.name] = st.busy.seconds();
    int64_t wait = 0, transfer = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!traces::is_collective_kind(r.ops[i].kind)) continue;
      int64_t last = 0;  // when the last rank arrived at this collective
      for (size_t q = 0; q < reps.size(); ++q) last = std::max(last, base[q] + reps[q].ops[i].start.ns);
      const int64_t mine = base[k] + r.ops[i].start.ns, end = base[k] + r.ops[i].end.ns;
      wait += std::max<int64_t>(0, std::min(end, last) - mine);
      transfer += std::max<int64_t>(0, end - std::max(last, mine));
    }
    out.push_back({{"rank", k},
                   {"iteration_s", r.iteration.seconds()},
                   {"start_offset_s", 1e-9 * static_cast<double>(base[k] - base[0])},
                   {"busy_s", busy},
                   {"collective_wait_s", 1e-9 * static_cast<double>(wait)},
                   {"collective_transfer_s", 1e-9 * static_cast<double>(transfer)}});
  }
  return out;
}

}  // namespace protwin::cli
