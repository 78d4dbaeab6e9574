// Byte-level language modelling data (vocab 256): a text file read whole; a batch is B windows of
// T + 1 consecutive bytes (inputs and next-byte targets). Batches are a pure function of the data
// position, which starts at a seed-derived offset and advances by B * (T + 1) bytes per step
// (wrapping), so a checkpoint that stores the position resumes the exact batch sequence.
// Runtime header: includes ATen.
#pragma once

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace protwin::rt {

// A text file every Debian system has (package base-files).
inline constexpr const char* kDefaultDataFile = "/usr/share/common-licenses/GPL-3";

class ByteDataset {
 public:
  // Errors name `flag` ("--data") and the path; the file must hold at least seq + 2 bytes.
  ByteDataset(const std::string& path, int64_t seq, const std::string& flag = "--data");

  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }
  const std::string& path() const { return path_; }
  int64_t start_position(uint64_t seed) const;
  int64_t next_position(int64_t pos, int64_t batch) const;
  // tokens, targets: [batch, seq] int64.
  void batch(int64_t pos, int64_t batch, at::Tensor& tokens, at::Tensor& targets) const;

 private:
  std::string path_, bytes_;
  int64_t seq_;
  int64_t span() const { return size() - seq_ - 1; }  // valid window starts: [0, span)
};

}  // namespace protwin::rt
