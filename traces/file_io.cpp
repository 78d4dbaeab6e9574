#include "traces/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "traces/error.h"

namespace protwin::traces {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PROTWIN_CHECK(in.good(), path, ": cannot open for reading (", std::strerror(errno), ")");
  struct stat st {};
  const bool regular = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  PROTWIN_CHECK(!S_ISDIR(st.st_mode), path, ": is a folder; expected a file");
  if (regular) {
    std::ostringstream ss;
    ss << in.rdbuf();
    PROTWIN_CHECK(!in.bad(), path, ": read failed");
    return ss.str();
  }
  // A pipe or device (/dev/stdin, <(...), /dev/zero) has no size: read it up to a bound.
  std::string out;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<size_t>(in.gcount()));
    PROTWIN_CHECK(out.size() <= kMaxStreamBytes, path, ": more than ", kMaxStreamBytes >> 20,
                  " MiB from a file that is not a regular file");
  }
  PROTWIN_CHECK(!in.bad(), path, ": read failed");
  return out;
}

std::string output_target(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string target = path;
  // Write the file a link points to (following a chain of links, dangling ones too), keep the link.
  fs::path p(path);
  for (int hops = 0; fs::is_symlink(p, ec); ++hops) {
    PROTWIN_CHECK(hops < 40, path, ": too many levels of symbolic links");
    const fs::path next = fs::read_symlink(p, ec);
    PROTWIN_CHECK(!ec, path, ": cannot read the symbolic link (", ec.message(), ")");
    p = next.is_absolute() ? next : p.parent_path() / next;
    target = p.string();
  }
  struct stat st {};
  PROTWIN_CHECK(::stat(target.c_str(), &st) != 0 || S_ISREG(st.st_mode), path,
                S_ISDIR(st.st_mode) ? ": is a folder; expected a file name"
                                    : ": is not a regular file (a device, pipe or socket); refusing to replace it");
  return target;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFileWriter out(path);
  out.write(content);
  out.commit();
}

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(output_target(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  PROTWIN_CHECK(fd_ >= 0, path_, ": cannot write (", std::strerror(errno), ")");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::write(const std::string& piece) {
  buffer_ += piece;
  if (buffer_.size() >= (size_t{1} << 20)) flush();
}

void AtomicFileWriter::flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    PROTWIN_CHECK(n > 0, path_, ": write failed (", std::strerror(errno), ")");
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
}

void AtomicFileWriter::commit() {
  flush();
  const bool synced = ::fsync(fd_) == 0;
  ::close(fd_);
  fd_ = -1;
  if (!synced || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    PROTWIN_CHECK(false, path_, ": cannot replace file (", std::strerror(err), ")");
  }
}

void require_writable(const std::string& out_path, const std::string& flag) {
  std::string path;
  try {
    path = output_target(out_path);
  } catch (const Error& e) {
    throw Error(flag + " " + e.what());
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  struct stat st {};
  PROTWIN_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), flag, " ", path, ": folder ", dir,
                " does not exist");
  PROTWIN_CHECK(::access(dir.c_str(), W_OK) == 0, flag, " ", path, ": folder ", dir, " is not writable");
  PROTWIN_CHECK(::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode), flag, " ", path,
                ": is a folder; expected a file name");
}

void require_creatable_folder(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  PROTWIN_CHECK(!path.empty(), flag, ": expected a folder name, got an empty one");
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(path), ec);
  PROTWIN_CHECK(!ec, flag, " ", path, ": not a usable folder name (", ec.message(), ")");
  // The nearest existing part: a folder we may write into (or the folder itself).
  while (!fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  PROTWIN_CHECK(fs::is_directory(p, ec), flag, " ", path, ": ", p.string(), " exists and is not a folder");
  PROTWIN_CHECK(::access(p.c_str(), W_OK) == 0, flag, " ", path, ": folder ", p.string(), " is not writable");
}

void create_folders(const std::string& path, const std::string& flag) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  PROTWIN_CHECK(!ec && std::filesystem::is_directory(path), flag, " ", path, ": cannot create folder (",
                ec ? ec.message() : std::string("exists and is not a folder"), ")");
}

}  // namespace protwin::traces
