#include "runtime/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <ATen/ATen.h>

#include "runtime/train/checkpoint_header.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {

std::mutex& hook_mutex() {
  static std::mutex m;
  return m;
}
std::function<void(int64_t)>& hook() {
  static std::function<void(int64_t)> h;
  return h;
}

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    PROTWIN_CHECK(w > 0, path, ": write failed (", std::strerror(errno), ")");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.bin"; }

void set_checkpoint_write_hook(std::function<void(int64_t)> h) {
  std::lock_guard<std::mutex> lock(hook_mutex());
  hook() = std::move(h);
}

void write_checkpoint(const std::string& dir, const Checkpoint& ck) {
  const int64_t n = ck.params.numel();
  PROTWIN_ASSERT(ck.exp_avg.numel() == n && ck.exp_avg_sq.numel() == n, "checkpoint state lengths differ");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  PROTWIN_CHECK(!ec, "--checkpoint ", dir, ": cannot create the folder (", ec.message(), ")");
  const at::Tensor parts[3] = {ck.params.contiguous(), ck.exp_avg.contiguous(), ck.exp_avg_sq.contiguous()};
  CheckpointHeader header;
  header.step = ck.step;
  header.data_position = ck.data_position;
  header.seed = ck.seed;
  header.model_spec = ck.model_spec;
  header.params = n;
  uint64_t sum = header_checksum(header);
  for (const at::Tensor& t : parts) sum = fnv1a(sum, static_cast<const char*>(t.data_ptr()), t.nbytes());
  header.checksum = sum;
  const std::string head = encode_checkpoint_header(header);

  const std::string final_path = checkpoint_path(dir), tmp = final_path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  PROTWIN_CHECK(fd >= 0, tmp, ": cannot open for writing (", std::strerror(errno), ")");
  try {
    write_all(fd, head.data(), head.size(), tmp);
    int64_t written = 0;
    bool hooked = false;
    for (const at::Tensor& t : parts) {
      write_all(fd, static_cast<const char*>(t.data_ptr()), t.nbytes(), tmp);
      written += static_cast<int64_t>(t.nbytes());
      if (!hooked && written >= n * 4 * 3 / 2) {
        hooked = true;
        std::function<void(int64_t)> h;
        {
          std::lock_guard<std::mutex> lock(hook_mutex());
          h = hook();
        }
        if (h) h(written);
      }
    }
    PROTWIN_CHECK(::fsync(fd) == 0, tmp, ": fsync failed (", std::strerror(errno), ")");
  } catch (...) {
    ::close(fd);
    throw;  // the temporary stays behind; the previous checkpoint is untouched
  }
  ::close(fd);
  PROTWIN_CHECK(std::rename(tmp.c_str(), final_path.c_str()) == 0, final_path, ": rename failed (",
                std::strerror(errno), ")");
}

Checkpoint read_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  std::ifstream in(path, std::ios::binary);
  PROTWIN_CHECK(in.good(), "--resume ", dir, ": no checkpoint (", path, " cannot be opened)");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  PROTWIN_CHECK(!ec, path, ": not a regular file (", ec.message(), ")");
  const CheckpointHeader h = read_checkpoint_header(in, size, path);
  Checkpoint ck;
  ck.step = h.step;
  ck.data_position = h.data_position;
  ck.seed = h.seed;
  ck.model_spec = h.model_spec;
  uint64_t sum = header_checksum(h);
  at::Tensor* parts[3] = {&ck.params, &ck.exp_avg, &ck.exp_avg_sq};
  for (at::Tensor* t : parts) {
    *t = at::empty({h.params}, at::TensorOptions().dtype(at::kFloat));
    if (!in.read(static_cast<char*>(t->data_ptr()), static_cast<std::streamsize>(t->nbytes())))
      throw Error(path + ": corrupt checkpoint: truncated payload");
    sum = fnv1a(sum, static_cast<const char*>(t->data_ptr()), t->nbytes());
  }
  if (sum != h.checksum) throw Error(path + ": corrupt checkpoint: checksum mismatch");
  return ck;
}

}  // namespace protwin::rt
