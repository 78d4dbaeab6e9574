#include "cli/options.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "traces/error.h"

namespace protwin::cli {

bool parse_options(const std::string& usage, po::options_description& desc,
                   const std::vector<std::string>& args, po::variables_map& vm,
                   const po::positional_options_description* positional) {
  desc.add_options()("help,h", "show this help and exit");
  try {
    po::command_line_parser parser(args);
    parser.options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(std::string(e.what()) + "\nhint: see '" + usage.substr(0, usage.find(" -")) +
                " --help'");
  }
  return true;
}

void require(const po::variables_map& vm, const std::string& flag) {
  PROTWIN_CHECK(vm.count(flag), "--", flag, " is required");
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, long total)
    : label_(std::move(label)), total_(total), enabled_(stderr_is_tty() && total > 0) {
  draw();
}

void Progress::tick(long n) {
  done_ += n;
  draw();
}

void Progress::draw() {
  if (!enabled_) return;
  const int pct = static_cast<int>(100.0 * static_cast<double>(done_) / static_cast<double>(total_));
  if (pct == last_percent_) return;
  last_percent_ = pct;
  const int width = 30, filled = pct * width / 100;
  std::fprintf(stderr, "\r%s [%s%s] %3d%% (%ld/%ld)", label_.c_str(),
               std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), '.').c_str(), pct, done_, total_);
  std::fflush(stderr);
}

void Progress::done() {
  if (enabled_ && !finished_) std::fprintf(stderr, "\n");
  finished_ = true;
}

Progress::~Progress() { done(); }

}  // namespace protwin::cli
