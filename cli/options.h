// Shared option handling for subcommands: Boost.Program_options stays inside cli/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/progress.h"

namespace protwin::cli {

namespace po = boost::program_options;

// Parses `args` against `desc`. Returns false after printing help when --help/-h was given.
// Everything a command line can get wrong becomes a protwin::Error naming the flag or argument
// (exit 2), before the subcommand does any work:
//  - unknown flags, missing values, numbers that do not parse;
//  - arguments that are not flags, beyond what `positional` takes ("unexpected argument 'x'");
//  - numbers that are not finite (--lr nan, --gpu-memory-GB inf), and the numbers of the flags
//    with a sane range (check_flag_range: --gbs, --seq, --tp, --threads, ...) outside it;
//  - output files (-o/--output, --chrome-trace, --plan-out, --csv, --profile-out) whose folder does
//    not exist or is not writable, so that no work is wasted and no output is half written. An
//    output whose value is named DIR (po::value(&dir)->value_name("DIR")) is a folder the
//    subcommand creates: its nearest existing ancestor must be a writable folder.
// `usage` is the first help line, e.g. "protwin simulate --plan P.json [options]".
bool parse_options(const std::string& usage, po::options_description& desc,
                   const std::vector<std::string>& args, po::variables_map& vm,
                   const po::positional_options_description& positional = {});

// Checks a number of the flag --`flag` against its sane range, as parse_options does for the
// flags it parses; for numbers a subcommand parses itself (--batch N|auto). Flags without a range
// pass.
void check_flag_range(const std::string& flag, int64_t value);

// Requires a flag to be present ("--plan is required").
void require(const po::variables_map& vm, const std::string& flag);

// True when `flag` was given on the command line (not merely defaulted).
bool given(const po::variables_map& vm, const std::string& flag);

// The cost-model flags of every subcommand that simulates with a machine (what they choose:
// hwmodels/cost_model_choice.h). --no-host-dispatch: no host thread issues the GPU work (the
// machine's host_dispatch section is turned off), which gives the predictions of the simulator
// before host dispatch (DESIGN §4). --profile: a measured op profile (shipped name or file,
// hw::load_op_profile) whose entries win over the machine's curves.
void add_cost_options(po::options_description& desc, bool& no_host_dispatch, std::string& profile);

// Prints JSON (2-space indent) to stdout and returns 0, the exit code: `return print_json(j);` ends
// a subcommand whose output is JSON.
int print_json(const nlohmann::json& j);

}  // namespace protwin::cli
