// CPU Adam benchmark: protwin's adam_step_cpu against torch::optim::Adam on the same number of
// fp32 parameters and threads. Torch-free header; the CLI prints the result.
#pragma once

#include <cstdint>
#include <string>

namespace protwin::rt {

struct AdamBenchResult {
  int64_t params = 0;
  int threads = 0;
  int repeats = 0;               // timed steps per optimizer (after one warm-up step); best kept
  std::string kernel;            // the protwin kernel used (avx512 / avx2 / scalar)
  double protwin_seconds = 0;    // best step time
  double torch_seconds = 0;
  double protwin_params_per_s = 0;
  double torch_params_per_s = 0;
  double speedup = 0;            // protwin_params_per_s / torch_params_per_s
  int64_t bytes_per_param = 28;  // what the protwin kernel reads (p, g, m, v) and writes (p, m, v)
  double dram_GBps = 0;          // bytes_per_param * params / protwin_seconds (1 GB = 1e9 B)
  // This machine's memory bandwidth on the same threads and buffers: a STREAM-like in-place
  // update a = 0.5 a + x (12 bytes per element, the access pattern of Adam's updates).
  double machine_dram_GBps = 0;
  double fraction_of_dram = 0;  // dram_GBps / machine_dram_GBps
};

// Times one Adam step (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01) of each optimizer,
// best of `repeats`. torch runs with at::set_num_threads(threads) (restored afterwards).
// Needs 16 bytes per parameter for each side in turn. Throws protwin::Error on bad arguments.
AdamBenchResult bench_adam(int64_t params, int threads, int repeats = 3);

}  // namespace protwin::rt
