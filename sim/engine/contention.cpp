#include "sim/engine/contention.h"

#include <algorithm>

#include "traces/report.h"

namespace protwin::sim {

std::vector<ContentionRule> contention_rules_from_profile(const nlohmann::json& provenance) {
  std::vector<ContentionRule> rules;
  if (!provenance.is_object() || !provenance.contains("contention")) return rules;
  const auto& c = provenance["contention"];
  auto add = [&](const char* key, const char* stream, std::vector<std::string> beside) {
    if (c.contains(key) && c[key].is_number()) rules.push_back({stream, std::move(beside), c[key].get<double>()});
  };
  add("compute_slowdown_with_copies", "compute", {"h2d", "d2h"});
  add("compute_slowdown_with_adam", "compute", {"cpu_optim"});
  add("adam_slowdown_with_compute", "cpu_optim", {"compute"});
  add("compute_slowdown_with_collectives", "compute", {"collective"});  // N-rank profiles only
  // copy_slowdown_with_compute is not used: a copy's time is its link transfer, which the link
  // model shares; only its latency is a fixed time.
  return rules;
}

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
