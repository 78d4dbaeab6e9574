// The subcommands of `protwin`. Each cli/<name>.cpp registers itself with
// PROTWIN_SUBCOMMAND(name, summary, run), so adding one never edits a shared table.
#pragma once

#include <string>
#include <vector>

namespace protwin::cli {

// args: the arguments after the subcommand name. Returns the exit code (0 ok); user errors are
// thrown as protwin::Error and turned into exit 2 by main().
using SubcommandFn = int (*)(const std::vector<std::string>& args);

struct Subcommand {
  std::string name;
  std::string summary;
  SubcommandFn run;
};

bool register_subcommand(const Subcommand& sub);

// Runs `protwin-rt <args...>` (the LibTorch subcommands) in place of this process and returns its
// exit code; a user error if the runtime was not built (no LibTorch).
int run_runtime_binary(const std::vector<std::string>& args);

}  // namespace protwin::cli

#define PROTWIN_SUBCOMMAND_CAT2(a, b) a##b
#define PROTWIN_SUBCOMMAND_CAT(a, b) PROTWIN_SUBCOMMAND_CAT2(a, b)
#define PROTWIN_SUBCOMMAND(name, summary, fn)                                  \
  namespace {                                                                  \
  const bool PROTWIN_SUBCOMMAND_CAT(protwin_registered_, __LINE__) =           \
      ::protwin::cli::register_subcommand({name, summary, fn});                \
  }
