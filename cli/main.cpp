// protwin: a digital twin of offloaded LLM training. One command, many subcommands (DESIGN §8).
// Exit codes: 0 ok, 1 internal error, 2 user error.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "cli/subcommand.h"
#include "traces/error.h"
#ifdef PROTWIN_RUNTIME_BINARY
#include "runtime/memory/host_allocator.h"
#else
#include "cli/runtime_process.h"
#include "sim/distributed/evaluate_points.h"
#endif

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
  std::map<std::string, std::string> listed;
  for (const auto& [name, s] : registry()) listed[name] = s.summary;
  // The runtime's subcommands, listed by the runtime binary itself (protwin-rt has them already).
  // A name both binaries have (bench) is this binary's, whose summary covers both halves.
#ifdef PROTWIN_RUNTIME_BINARY
  const std::string rt;
#else
  const std::string rt = runtime_binary_path();
#endif
  if (!rt.empty()) {
    if (FILE* p = ::popen((rt + " --list-subcommands").c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, p)) {
        std::string l(line);
        const size_t tab = l.find('\t');
        if (tab != std::string::npos) listed.emplace(l.substr(0, tab), l.substr(tab + 1, l.size() - tab - 2));
      }
      ::pclose(p);
    }
  }
  for (const auto& [name, summary] : listed)
    std::cout << "  " << name << std::string(name.size() < 16 ? 16 - name.size() : 1, ' ') << summary << "\n";
  std::cout << "\nexit codes: 0 ok, 1 internal error, 2 user error\n";
}
}  // namespace

bool register_subcommand(const Subcommand& sub) {
  registry()[sub.name] = sub;
  return true;
}

}  // namespace protwin::cli

int main(int argc, char** argv) {
  using namespace protwin::cli;
  if (argc >= 2 && !std::strcmp(argv[1], "--list-subcommands")) {
    for (const auto& [name, s] : registry()) std::cout << name << "\t" << s.summary << "\n";
    return 0;
  }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
#ifdef PROTWIN_RUNTIME_BINARY
  // Training and the profile that predicts it run with the emulated device's allocator
  // (host_allocator.h); `bench adam` keeps glibc's defaults, as a PyTorch user's optimizer sees them.
  if (name == "train" || name == "profile" || name == "interleave") protwin::runtime::keep_freed_host_memory(argv);
#endif
  const auto it = registry().find(name);
#ifndef PROTWIN_RUNTIME_BINARY
  if (it == registry().end()) {
    // Not a simulator subcommand: the runtime binary may have it.
    const std::string rt = runtime_binary_path();
    if (!rt.empty()) {
      ::execv(rt.c_str(), argv);
      std::cerr << "protwin: cannot run " << rt << "\n";
      return 1;
    }
  }
#endif
  if (it == registry().end()) {
    std::cerr << "protwin: unknown subcommand '" << name << "'\nhint: 'protwin --help' lists them\n";
    return 2;
  }
  try {
    return it->second.run(std::vector<std::string>(argv + 2, argv + argc));
#ifndef PROTWIN_RUNTIME_BINARY
  } catch (const protwin::sim::WorkerRankDone&) {
    return 0;  // an MPI rank other than 0: its points went to rank 0, which prints the result
#endif
  } catch (const protwin::Error& e) {
    std::cerr << "protwin " << name << ": " << (e.kind() == protwin::ErrorKind::kUser ? "error: " : "")
              << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "protwin " << name << ": internal error: " << e.what() << "\n";
    return 1;
  }
}
