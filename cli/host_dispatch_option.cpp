#include "cli/host_dispatch_option.h"

namespace protwin::cli {

void add_cost_options(po::options_description& desc, bool& no_host_dispatch, std::string& profile) {
  desc.add_options()("no-host-dispatch", po::bool_switch(&no_host_dispatch),
                     "no host thread issuing the GPU work (the machine's host_dispatch section off)")
      ("profile", po::value(&profile)->default_value(profile),
       "measured op profile (protwin.profile: shipped name or file, 'none'): its entries price the ops "
       "instead of the machine's curves, its measured contention slows ops sharing the host's cores (as in calibrate)");
}

}  // namespace protwin::cli
