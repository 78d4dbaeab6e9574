#include "cli/progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace protwin::cli {

namespace {
std::atomic<bool> g_quiet{false};

std::string clock_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return format("%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return format("%ld:%02ld", s / 60, s % 60);
}
}  // namespace

void set_quiet(bool q) { g_quiet = q; }
bool quiet() { return g_quiet; }

std::string progress_line(const std::string& label, long done, long total, double elapsed_s) {
  const long d = std::clamp(done, 0L, std::max(total, 0L));
  const long width = 20, filled = total > 0 ? d * width / total : 0, pct = total > 0 ? d * 100 / total : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  std::string line = label + format(" [%s] %3ld%% (%ld/%ld)", bar.c_str(), pct, d, total);
  if (d > 0 && elapsed_s > 0) {
    const double rate = static_cast<double>(d) / elapsed_s;
    line += rate >= 10 ? format("  %.0f/s", rate) : format("  %.2f/s", rate);
    line += "  " + clock_text(static_cast<double>(total - d) / rate) + " left";
  }
  return line;
}

std::string format(const char* fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  std::string out(static_cast<size_t>(std::max(0, std::vsnprintf(nullptr, 0, fmt, ap))), '\0');
  va_end(ap);
  std::vsnprintf(out.data(), out.size() + 1, fmt, again);  // (any length: a machine's names are the user's)
  va_end(again);
  return out;
}

std::string file_size_text(long long bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return format("%.2f GB", b / 1e9);
  if (b >= 1e6) return format("%.1f MB", b / 1e6);
  if (b >= 1e3) return format("%.1f kB", b / 1e3);
  return format("%lld B", bytes);
}

std::string written_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? " (" + file_size_text(st.st_size) + ")" : "";
}

Progress::Progress(std::string label, long total)
    : label_(std::move(label)),
      total_(total),
      enabled_(total > 0 && !quiet() && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::tick(long n) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  draw_locked();
}

void Progress::draw_locked() {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // Quiet for short work; then at most ten redraws a second (and always the last count).
  if (finished_ || elapsed < kProgressDelaySeconds) return;
  if (drawn_ && done_ < total_ && std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
  last_draw_ = now;
  drawn_ = true;
  std::fprintf(stderr, "\r%s\033[K", progress_line(label_, done_, total_, elapsed).c_str());
  std::fflush(stderr);
}

void Progress::done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_ && !finished_) std::fprintf(stderr, "\n");
  finished_ = true;
}

Progress::~Progress() { done(); }

}  // namespace protwin::cli
