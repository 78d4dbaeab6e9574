// Running the sibling `protwin-rt` binary (the LibTorch subcommands) as a child process, for
// simulator subcommands that need measurements (calibrate).
#pragma once

#include <string>
#include <vector>

namespace protwin::cli {

// The `protwin-rt` next to this executable, or "" if there is none.
std::string runtime_binary_path();

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;     // everything the child wrote to stdout
};

// Runs `program args...`, capturing stdout; the child's stderr goes to `stderr_path` (appended)
// or, when empty, to this process's stderr. Throws protwin::Error when it cannot be started.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stderr_path = "");

}  // namespace protwin::cli
