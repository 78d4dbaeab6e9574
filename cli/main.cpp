// protwin: a digital twin of offloaded LLM training. One command, many subcommands (DESIGN §8).
// Exit codes: 0 ok, 1 internal error, 2 user error.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>

#include "cli/subcommand.h"
#include "traces/error.h"

namespace protwin::cli {

namespace {
std::map<std::string, Subcommand>& registry() {
  static std::map<std::string, Subcommand> r;  // filled before main() by PROTWIN_SUBCOMMAND
  return r;
}

void print_usage() {
  std::cout << "protwin: a digital twin of offloaded LLM training\n\n"
               "usage: protwin <subcommand> [options]   (protwin <subcommand> --help for more)\n\n"
               "subcommands:\n";
  for (const auto& s : subcommands()) {
    std::cout << "  " << s.name << std::string(s.name.size() < 16 ? 16 - s.name.size() : 1, ' ')
              << s.summary << "\n";
  }
  std::cout << "\nexit codes: 0 ok, 1 internal error, 2 user error\n";
}
}  // namespace

bool register_subcommand(const Subcommand& sub) {
  registry()[sub.name] = sub;
  return true;
}

std::vector<Subcommand> subcommands() {
  std::vector<Subcommand> out;
  for (const auto& [name, s] : registry()) out.push_back(s);
  return out;
}

}  // namespace protwin::cli

int main(int argc, char** argv) {
  using namespace protwin::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  const auto subs = subcommands();
  auto it = std::find_if(subs.begin(), subs.end(), [&](const Subcommand& s) { return s.name == name; });
  if (it == subs.end()) {
    std::cerr << "protwin: unknown subcommand '" << name << "'\nhint: 'protwin --help' lists them\n";
    return 2;
  }
  try {
    return it->run(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const protwin::Error& e) {
    std::cerr << "protwin " << name << ": " << (e.kind() == protwin::ErrorKind::kUser ? "error: " : "")
              << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "protwin " << name << ": internal error: " << e.what() << "\n";
    return 1;
  }
}
