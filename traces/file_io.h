// Whole-file reads and crash-safe writes. Every write goes to a temporary name in the same
// folder and is renamed over the target, so a crash never leaves a half-written file.
#pragma once

#include <string>

namespace protwin::traces {

// Most bytes read from a file that is not a regular file (a pipe or a device such as /dev/zero).
constexpr size_t kMaxStreamBytes = size_t{1} << 28;

// Reads a file; a missing or unreadable file, or a folder, is a user error naming the path.
std::string read_file(const std::string& path);

// The file an output path names: a symbolic link's target (the link is kept), else `path`.
// A user error naming `path` if that is a folder or an existing special file (device, pipe, socket).
std::string output_target(const std::string& path);

// Writes `content` to `path` atomically (temporary file + fsync + rename). A symbolic link is
// written through to its target; a special file such as /dev/full is refused, never replaced.
void write_file_atomic(const std::string& path, const std::string& content);

// The same, piece by piece, so that a large output (a plan, a Chrome trace) is streamed and never
// held whole in memory: write() appends, commit() renames the temporary over `path`; without
// commit() (an error on the way) the temporary is removed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(const std::string& piece);
  void commit();

 private:
  void flush();
  std::string path_, tmp_, buffer_;
  int fd_ = -1;
};

// Checks, before long work, that `path` can be written later: its folder exists and is writable,
// and `path` is not itself a folder. A user error naming `flag` and the folder otherwise.
void require_writable(const std::string& path, const std::string& flag);

// Checks, before long work, that the folder `path` exists or can be created: every existing part
// of it is a folder and the nearest existing one is writable. A user error naming `flag` otherwise.
void require_creatable_folder(const std::string& path, const std::string& flag);

// Creates the folder `path` and any missing parents (mkdir -p); a user error naming `flag` if it
// cannot.
void create_folders(const std::string& path, const std::string& flag);

}  // namespace protwin::traces
