#include "runtime/memory/speed_throttle.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "traces/error.h"

namespace protwin::rt {

namespace {
std::atomic<double> g_factor{1.0};
std::atomic<double> g_copy_factor{1.0};
}  // namespace

void set_emulated_slowdown(double factor) {
  PROTWIN_CHECK(factor >= 1, "emulated slowdown: expected a factor >= 1, got ", factor);
  g_factor.store(factor);
}

double emulated_slowdown() { return g_factor.load(); }

void stretch(double elapsed_s) {
  const double f = g_factor.load();
  if (f <= 1 || elapsed_s <= 0) return;
  // Busy, not asleep: a slower device keeps its core for longer. A sleeping thread would give the
  // core away and, on a loaded machine, wait for the scheduler after every op.
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>((f - 1) * elapsed_s);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void set_emulated_copy_slowdown(double factor) {
  PROTWIN_CHECK(factor >= 1, "emulated copy slowdown: expected a factor >= 1, got ", factor);
  g_copy_factor.store(factor);
}

double emulated_copy_slowdown() { return g_copy_factor.load(); }

void stretch_copy(double elapsed_s) {
  const double f = g_copy_factor.load();
  if (f <= 1 || elapsed_s <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>((f - 1) * elapsed_s));
}

}  // namespace protwin::rt
