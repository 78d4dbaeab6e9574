// One updating progress line on stderr for long quiet work (DESIGN §8): counts, rate and time
// left. It appears only once the work has run for kProgressDelaySeconds, only when stderr is a
// terminal, and never with --quiet, so short runs, pipes and logs stay clean. Also the text
// helpers it and the subcommands share (format, file sizes).
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace protwin::cli {

inline constexpr double kProgressDelaySeconds = 2.0;

// --quiet (every subcommand accepts it): no progress line at all.
void set_quiet(bool quiet);
bool quiet();

// "label [#####.........] 42% (21/50)  3.5/s  0:06 left": the line for `done` of `total` items
// after `elapsed_s` seconds; the time left assumes the rate so far.
std::string progress_line(const std::string& label, long done, long total, double elapsed_s);

// printf into a std::string (of any length).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// "216.4 MB" (decimal units, as file managers show sizes).
std::string file_size_text(long long bytes);

// " (216.4 MB)": the size of a file just written, for "wrote plan: p.json (216.4 MB)"; "" if it
// cannot be read.
std::string written_size(const std::string& path);

class Progress {
 public:
  Progress(std::string label, long total);
  void tick(long n = 1);  // thread-safe
  void done();            // ends the line (if one was drawn)
  ~Progress();

 private:
  void draw_locked();
  std::mutex mu_;
  std::string label_;
  long total_, done_ = 0;
  bool enabled_, drawn_ = false, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace protwin::cli
