// A per-process scratch folder under the build tree for a CLI test's input files, removed at exit.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

// The folder PROTWIN_BINARY_DIR/tests/cli/<tag>_<pid>, made on first use (one tag per test program).
inline const std::string& scratch_dir(const std::string& tag) {
  static const std::string dir = [&] {
    const std::string d = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/" + tag + "_" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    static std::string to_remove;
    to_remove = d;
    std::atexit([] { std::filesystem::remove_all(to_remove); });
    return d;
  }();
  return dir;
}

// Writes `text` to `name` in the scratch folder and returns its path.
inline std::string write_scratch(const std::string& tag, const std::string& name, const std::string& text) {
  const std::string path = scratch_dir(tag) + "/" + name;
  std::ofstream(path) << text;
  return path;
}
