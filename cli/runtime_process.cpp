#include "cli/runtime_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/subcommand.h"
#include "traces/error.h"

namespace protwin::cli {

namespace {

// execv(program, program args...); returns only when that fails.
void exec(const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
}

}  // namespace

std::string runtime_binary_path() {
  std::string self(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return "";
  self.resize(static_cast<size_t>(n));
  const std::string path = self.substr(0, self.rfind('/') + 1) + "protwin-rt";
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

int run_runtime_binary(const std::vector<std::string>& args) {
  const std::string rt = runtime_binary_path();
  PROTWIN_CHECK(!rt.empty(), "this needs the LibTorch runtime, which was not built (LibTorch not found)");
  std::cout.flush();
  exec(rt, args);
  PROTWIN_CHECK(false, "cannot run ", rt);
  return 1;
}

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stderr_path) {
  int out_pipe[2];
  PROTWIN_CHECK(::pipe(out_pipe) == 0, "cannot create a pipe for ", program, ": ", std::strerror(errno));
  const pid_t pid = ::fork();
  PROTWIN_CHECK(pid >= 0, "cannot start ", program, ": ", std::strerror(errno));
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    if (!stderr_path.empty()) {
      const int fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDERR_FILENO);
        ::close(fd);
      }
    }
    exec(program, args);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ProcessResult r;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n > 0) r.out.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(out_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

}  // namespace protwin::cli
