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

#include "traces/error.h"

namespace protwin::rt {

namespace {

constexpr char kMagic[] = "PROTWIN-CKPT v1\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;

std::mutex& hook_mutex() {
  static std::mutex m;
  return m;
}
std::function<void(int64_t)>& hook() {
  static std::function<void(int64_t)> h;
  return h;
}

uint64_t fnv1a(uint64_t h, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

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
  uint64_t sum = kFnvBasis;
  for (const at::Tensor& t : parts) sum = fnv1a(sum, static_cast<const char*>(t.data_ptr()), t.nbytes());
  const nlohmann::json header = {{"format", "protwin.checkpoint"}, {"version", 1},
                                 {"step", ck.step},               {"data_position", ck.data_position},
                                 {"seed", ck.seed},               {"model_spec", ck.model_spec},
                                 {"params", n},                   {"payload_bytes", 3 * n * 4},
                                 {"fnv1a64", std::to_string(sum)}};
  const std::string head = header.dump();
  const uint64_t head_len = head.size();

  const std::string final_path = checkpoint_path(dir), tmp = final_path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  PROTWIN_CHECK(fd >= 0, tmp, ": cannot open for writing (", std::strerror(errno), ")");
  try {
    write_all(fd, kMagic, kMagicLen, tmp);
    write_all(fd, reinterpret_cast<const char*>(&head_len), sizeof(head_len), tmp);
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
  auto corrupt = [&](const std::string& why) { return Error(path + ": corrupt checkpoint: " + why); };
  std::string magic(kMagicLen, '\0');
  if (!in.read(magic.data(), static_cast<std::streamsize>(kMagicLen)) || magic != kMagic)
    throw corrupt("bad magic (not a protwin checkpoint)");
  uint64_t head_len = 0;
  if (!in.read(reinterpret_cast<char*>(&head_len), sizeof(head_len)) || head_len > (1u << 26))
    throw corrupt("bad header length");
  std::string head(head_len, '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(head_len))) throw corrupt("truncated header");
  nlohmann::json h = nlohmann::json::parse(head, nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object() || h.value("format", "") != "protwin.checkpoint" ||
      !h.contains("params") || !h["params"].is_number_integer() || !h.contains("fnv1a64") ||
      !h["fnv1a64"].is_string())
    throw corrupt("bad header");
  Checkpoint ck;
  const int64_t n = h["params"].get<int64_t>();
  if (n < 0) throw corrupt("negative parameter count");
  ck.step = h.value("step", int64_t{0});
  ck.data_position = h.value("data_position", int64_t{0});
  ck.seed = h.value("seed", uint64_t{0});
  ck.model_spec = h.value("model_spec", nlohmann::json());
  uint64_t sum = kFnvBasis;
  at::Tensor* parts[3] = {&ck.params, &ck.exp_avg, &ck.exp_avg_sq};
  for (at::Tensor* t : parts) {
    *t = at::empty({n}, at::TensorOptions().dtype(at::kFloat));
    if (!in.read(static_cast<char*>(t->data_ptr()), static_cast<std::streamsize>(t->nbytes())))
      throw corrupt("truncated payload");
    sum = fnv1a(sum, static_cast<const char*>(t->data_ptr()), t->nbytes());
  }
  char extra = 0;
  if (in.read(&extra, 1)) throw corrupt("trailing bytes after the payload");
  if (std::to_string(sum) != h["fnv1a64"].get<std::string>()) throw corrupt("checksum mismatch");
  return ck;
}

}  // namespace protwin::rt
