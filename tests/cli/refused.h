// The check every bad-input CLI test makes: `protwin args` exits 2, its stderr names what is wrong
// (contains `want`), and it is no internal error. Include after catch2/catch.hpp.
#pragma once

#include <string>

#include "tests/cli/run_protwin.h"

// Runs `args`; requires exit 2 and that stderr contains `want`; returns stderr.
inline std::string refused(const std::string& args, const std::string& want) {
  const CliResult r = run_protwin(args);
  INFO("protwin " << args << "\nstderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find(want) != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  return r.err;
}
