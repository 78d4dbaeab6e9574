#include "runtime/memory/speed_throttle.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "traces/error.h"

namespace protwin::rt {

namespace {
std::atomic<double> g_factor{1.0};
}  // namespace

void set_emulated_slowdown(double factor) {
  PROTWIN_CHECK(factor >= 1, "emulated slowdown: expected a factor >= 1, got ", factor);
  g_factor.store(factor);
}

double emulated_slowdown() { return g_factor.load(); }

void stretch(double elapsed_s) {
  const double f = g_factor.load();
  if (f > 1 && elapsed_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>((f - 1) * elapsed_s));
}

}  // namespace protwin::rt
