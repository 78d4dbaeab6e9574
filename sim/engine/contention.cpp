#include "sim/engine/contention.h"

#include <algorithm>

#include "traces/report.h"

namespace protwin::sim {

std::vector<ContentionRule> collective_sm_rules(const std::vector<std::string>& streams,
                                                const std::vector<std::string>& collective_roles, int sms,
                                                int channels) {
  std::vector<ContentionRule> rules;
  if (channels <= 0 || sms <= channels) return rules;
  const double slowdown = static_cast<double>(sms) / static_cast<double>(sms - channels);
  auto role = [](const std::string& s) {
    const size_t dot = s.rfind('.');
    return dot == std::string::npos ? s : s.substr(dot + 1);
  };
  for (const auto& c : streams) {
    if (role(c) != "compute") continue;
    ContentionRule rule{c, {}, slowdown};
    for (const auto& s : streams)
      if (std::find(collective_roles.begin(), collective_roles.end(), role(s)) != collective_roles.end() &&
          traces::host_of_stream(s) == traces::host_of_stream(c))
        rule.beside.push_back(s);
    if (!rule.beside.empty()) rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace protwin::sim
