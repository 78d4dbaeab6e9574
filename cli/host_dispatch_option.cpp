#include "cli/host_dispatch_option.h"

namespace protwin::cli {

void add_cost_options(po::options_description& desc, bool& no_host_dispatch, std::string& profile) {
  desc.add_options()("no-host-dispatch", po::bool_switch(&no_host_dispatch),
                     "no host thread issuing the GPU work (the machine's host_dispatch section off)")
      ("profile", po::value(&profile)->default_value(profile),
       "measured op profile (protwin.profile: shipped name or file, 'none'): its entries price the ops "
       "instead of the machine's curves (as in calibrate)");
}

hw::Machine load_sim_machine(const std::string& name, const std::vector<std::string>& set, bool no_host_dispatch) {
  hw::Machine m = hw::load_machine(name, set);
  if (no_host_dispatch) {
    m.host_dispatch.enabled = false;
    turn_off_host_dispatch(m.json);
  }
  return m;
}

void turn_off_host_dispatch(nlohmann::json& machine_json) {
  if (machine_json.contains("host_dispatch") && machine_json["host_dispatch"].is_object()) {
    machine_json["host_dispatch"]["enabled"] = false;
  }
}

}  // namespace protwin::cli
