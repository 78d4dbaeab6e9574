// Runs the built `protwin` binary with arguments and captures exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the command line as is (quote it yourself); `launcher`, when given, goes
// before the binary (e.g. "mpirun -np 2").
inline CliResult run_protwin(const std::string& args, const std::string& launcher = "") {
  static int counter = 0;
  const std::string base = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/run" + std::to_string(::getpid()) +
                           "_" + std::to_string(counter++);
  const std::string cmd = launcher + (launcher.empty() ? "" : " ") + std::string(PROTWIN_BINARY_DIR) +
                          "/cli/protwin " + args + " >" + base +
                          ".out 2>" + base + ".err </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}
