#include "runtime/train/byte_dataset.h"

#include <fstream>

#include <ATen/ATen.h>

#include "traces/error.h"
#include "traces/file_io.h"

namespace protwin::rt {

ByteDataset::ByteDataset(const std::string& path, int64_t seq, const std::string& flag)
    : path_(path), seq_(seq) {
  PROTWIN_CHECK(std::ifstream(path).good(), flag, " ", path, ": cannot open the data file");
  // read_file refuses folders and bounds what a pipe or device (/dev/zero) may yield.
  try {
    bytes_ = traces::read_file(path);
  } catch (const Error& e) {
    throw Error(flag + " " + e.what());
  }
  PROTWIN_CHECK(size() >= seq + 2, flag, " ", path, ": ", size(), " bytes, but a sequence of ", seq,
                " needs at least ", seq + 2);
}

int64_t ByteDataset::start_position(uint64_t seed) const {
  // splitmix64: a well-mixed start from any seed.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<int64_t>(z % static_cast<uint64_t>(span()));
}

int64_t ByteDataset::next_position(int64_t pos, int64_t batch) const {
  return (pos + batch * (seq_ + 1)) % span();
}

void ByteDataset::batch(int64_t pos, int64_t batch, at::Tensor& tokens, at::Tensor& targets) const {
  tokens = at::empty({batch, seq_}, at::TensorOptions().dtype(at::kLong));
  targets = at::empty({batch, seq_}, at::TensorOptions().dtype(at::kLong));
  int64_t* tk = tokens.data_ptr<int64_t>();
  int64_t* tg = targets.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = (pos + b * (seq_ + 1)) % span();
    for (int64_t t = 0; t < seq_; ++t) {
      tk[b * seq_ + t] = static_cast<unsigned char>(bytes_[static_cast<size_t>(start + t)]);
      tg[b * seq_ + t] = static_cast<unsigned char>(bytes_[static_cast<size_t>(start + t + 1)]);
    }
  }
}

}  // namespace protwin::rt
