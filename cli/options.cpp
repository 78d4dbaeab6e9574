#include "cli/options.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "traces/error.h"
#include "traces/file_io.h"

namespace protwin::cli {

namespace {

// The sane range of the numeric flags subcommands share. Beyond it the products that size a
// workload or a plan (batch x seq x hidden bytes, TP x CP x PP x DP, GBS x seq tokens, the micro-
// batches of GBS / (MBS x DP)) overflow int64 or cannot be simulated in memory; the subcommands
// check the finer rules themselves (divisibility, the machine's GPUs, 0 meaning "default").
struct FlagRange {
  const char* flag;
  double lo, hi;
};
constexpr double kMaxBatch = 65536, kMaxParallel = 1 << 20;
constexpr FlagRange kFlagRanges[] = {
    {"batch", 1, kMaxBatch},         {"mbs", 1, kMaxBatch},           {"mbs-max", 1, kMaxBatch},
    {"gbs", 1, 1 << 24},             {"seq", 0, 1 << 20},             {"tp", 1, kMaxParallel},
    {"cp", 1, kMaxParallel},         {"pp", 1, kMaxParallel},         {"dp", 1, kMaxParallel},
    {"gpus", 0, 1 << 24},            {"gpus-per-node", 1, 4096},      {"nodes", 1, kMaxParallel},
    {"vpp", 1, 1024},                {"virtual-stages", 1, 1024},     {"num-microbatches", 1, 1 << 24},
    {"pad-vocab", 0, 65536},         {"max-layers", 1, 1 << 16},      {"threads", 1, 256},
    {"compute-threads", 0, 256},     {"gpu-memory-GB", 0, 1e6},       {"link-GBps", 0, 1e6},
    {"device-memory-MB", 0, 1e9},
};

const FlagRange* range_of(const std::string& flag) {
  for (const FlagRange& r : kFlagRanges)
    if (flag == r.flag) return &r;
  return nullptr;
}

std::string number_text(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return format("%g", v);  // as an ostream prints it
}

void check_number(const std::string& flag, double v, const std::string& text, bool integer) {
  PROTWIN_CHECK(std::isfinite(v), "--", flag, " ", text, ": expected a finite number");
  const FlagRange* r = range_of(flag);
  if (!r || (v >= r->lo && v <= r->hi)) return;
  throw Error("--" + flag + " " + text + ": out of range; expected " + (integer ? "an integer" : "a number") +
              " from " + number_text(r->lo) + " to " + number_text(r->hi));
}

// Numbers of every type the subcommands parse: non-finite values and values out of range fail.
void check_numbers(const po::variables_map& vm) {
  for (const auto& [flag, value] : vm) {
    const boost::any& a = value.value();
    if (const auto* v = boost::any_cast<double>(&a)) check_number(flag, *v, number_text(*v), false);
    else if (const auto* f = boost::any_cast<float>(&a)) check_number(flag, *f, number_text(*f), false);
    else if (const auto* i = boost::any_cast<int>(&a)) check_flag_range(flag, *i);
    else if (const auto* l = boost::any_cast<long>(&a)) check_flag_range(flag, *l);
    else if (const auto* ll = boost::any_cast<long long>(&a)) check_flag_range(flag, *ll);
    else if (const auto* u = boost::any_cast<unsigned long>(&a)) {
      if (range_of(flag)) {
        PROTWIN_CHECK(*u <= static_cast<unsigned long>(INT64_MAX), "--", flag, " ", *u, ": out of range");
        check_flag_range(flag, static_cast<int64_t>(*u));
      }
    }
  }
}

// Output files and folders, checked before any work.
constexpr const char* kOutputFlags[] = {"output", "chrome-trace", "plan-out", "csv", "profile-out", "host-dispatch"};

void check_outputs(const po::options_description& desc, const po::variables_map& vm) {
  for (const char* flag : kOutputFlags) {
    if (!vm.count(flag)) continue;
    const std::string* path = boost::any_cast<std::string>(&vm[flag].value());
    const po::option_description* od = desc.find_nothrow(flag, false);
    if (!path || path->empty() || !od) continue;
    std::string label = od->canonical_display_name(po::command_line_style::allow_dash_for_short);
    if (label.rfind('-', 0) != 0) label = "--" + label;
    if (od->semantic()->name().rfind("DIR", 0) == 0) traces::require_creatable_folder(*path, label);
    else traces::require_writable(*path, label);
  }
}

// "protwin machine" of "protwin machine NAME [--set ...]": the words before the first argument.
std::string command_of(const std::string& usage) {
  std::istringstream words(usage.substr(0, usage.find('\n')));
  std::string word, out;
  while (words >> word) {
    if (word.find_first_of("-[(<ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 0) break;
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

}  // namespace

bool parse_options(const std::string& usage, po::options_description& desc,
                   const std::vector<std::string>& args, po::variables_map& vm,
                   const po::positional_options_description& positional) {
  desc.add_options()("help,h", "show this help and exit")("quiet", "no progress line on stderr");
  const std::string hint = "\nhint: see '" + command_of(usage) + " --help'";
  try {
    po::command_line_parser parser(args);
    parser.options(desc);
    po::parsed_options parsed = parser.run();
    // Arguments that are not flags: the positional ones by name, any other is refused (Boost
    // would drop it silently without a positional description).
    unsigned position = 0;
    for (po::option& o : parsed.options) {
      if (o.position_key < 0) continue;
      const std::string token = o.original_tokens.empty() ? "" : o.original_tokens.front();
      if (position >= positional.max_total_count())
        throw Error("unexpected argument '" + token + "'; options are flags (--name value)" + hint);
      o.string_key = positional.name_for_position(position++);
    }
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(std::string(e.what()) + hint);
  }
  set_quiet(vm.count("quiet") > 0);
  check_numbers(vm);
  check_outputs(desc, vm);
  return true;
}

void check_flag_range(const std::string& flag, int64_t value) {
  check_number(flag, static_cast<double>(value), std::to_string(value), true);
}

void require(const po::variables_map& vm, const std::string& flag) {
  PROTWIN_CHECK(vm.count(flag), "--", flag, " is required");
}

bool given(const po::variables_map& vm, const std::string& flag) {
  return vm.count(flag) && !vm[flag].defaulted();
}

void add_cost_options(po::options_description& desc, bool& no_host_dispatch, std::string& profile) {
  desc.add_options()("no-host-dispatch", po::bool_switch(&no_host_dispatch),
                     "no host thread issuing the GPU work (the machine's host_dispatch section off)")
      ("profile", po::value(&profile)->default_value(profile),
       "measured op profile (protwin.profile: shipped name or file, 'none'): its entries price the ops "
       "instead of the machine's curves, its measured contention slows ops sharing the host's cores (as in calibrate)");
}

int print_json(const nlohmann::json& j) {
  std::cout << j.dump(2) << "\n";
  return 0;
}


}  // namespace protwin::cli
