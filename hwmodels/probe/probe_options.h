// protwin-probe's command line, in plain C++ (compiled by g++ and tested without a GPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace protwin::hw::probe {

struct ProbeOptions {
  std::string output;                  // machine-file fragment to write; empty = stdout
  int device = 0;                      // GPU measured for compute, HBM and host link
  bool quick = false;                  // fewer sizes and repetitions (a smoke run)
  int repeats = 10;                    // timed repetitions per point (median is kept)
  int64_t max_copy_bytes = int64_t{1} << 30;   // largest host<->device / HBM buffer
  std::vector<int64_t> gemm_sizes;     // square GEMM sizes (n); default set by kind of run
  std::vector<std::string> dtypes;     // fp32, tf32, fp16, bf16
  bool peers = true;                   // measure copies between every GPU pair
  bool help = false;
};

// Usage text printed by --help.
std::string probe_usage();

// Parses argv[1..]. Errors are protwin::Error naming the flag ("--repeats: expected ...").
ProbeOptions parse_probe_options(const std::vector<std::string>& args);

// The copy sizes of a run: powers of 4 (16 with --quick) from 4 KiB, and the largest.
std::vector<int64_t> copy_sizes(const ProbeOptions& o);

}  // namespace protwin::hw::probe
