// Shared option handling for subcommands: Boost.Program_options stays inside cli/.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

namespace protwin::cli {

namespace po = boost::program_options;

// Parses `args` against `desc`. Returns false after printing help when --help/-h was given.
// Unknown flags, missing values and bad numbers become protwin::Error naming the flag (exit 2).
// `usage` is the first help line, e.g. "protwin simulate --plan P.json [options]".
bool parse_options(const std::string& usage, po::options_description& desc,
                   const std::vector<std::string>& args, po::variables_map& vm,
                   const po::positional_options_description* positional = nullptr);

// Requires a flag to be present ("--plan is required").
void require(const po::variables_map& vm, const std::string& flag);

// Prints JSON (2-space indent) to stdout.
void print_json(const nlohmann::json& j);

// True when stderr is a terminal: progress bars are shown only then (DESIGN §8).
bool stderr_is_tty();

// A one-line progress bar on stderr, drawn only on a terminal.
class Progress {
 public:
  Progress(std::string label, long total);
  void tick(long n = 1);
  void done();
  ~Progress();

 private:
  void draw();
  std::string label_;
  long total_, done_ = 0;
  int last_percent_ = -1;
  bool enabled_, finished_ = false;
};

}  // namespace protwin::cli
