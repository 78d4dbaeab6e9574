// The header of a training checkpoint (checkpoint.h): everything but the tensors, so it is read,
// checked and fuzzed without LibTorch.
//
// Layout: kCheckpointMagic, a little-endian uint64 header length, the JSON header
// {format, version, step, data_position, seed, model_spec, params, payload_bytes, fnv1a64}, then
// payload_bytes of payload. fnv1a64 covers the header itself (as JSON without the fnv1a64 field,
// keys sorted) and then the payload, so an edited step or version is caught like a flipped weight.
#pragma once

#include <cstdint>
#include <istream>
#include <string>

#include <nlohmann/json.hpp>

namespace protwin::rt {

inline constexpr char kCheckpointMagic[] = "PROTWIN-CKPT v2\n";
inline constexpr int64_t kCheckpointVersion = 2;

struct CheckpointHeader {
  int64_t step = 0;           // optimizer steps done
  int64_t data_position = 0;  // where the next batch starts
  uint64_t seed = 0;
  nlohmann::json model_spec;  // the plan's meta.model_spec
  int64_t params = 0;         // fp32 elements in each of params, m and v
  uint64_t checksum = 0;      // FNV-1a 64 of the header (without it) and the payload
};

// FNV-1a 64, continued from `h`.
inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;
uint64_t fnv1a(uint64_t h, const char* p, size_t n);

// The checksum state after the header's own bytes: continue it over the payload.
uint64_t header_checksum(const CheckpointHeader& h);

// Magic, length and JSON header for `h` (h.checksum is written as given).
std::string encode_checkpoint_header(const CheckpointHeader& h);

// Reads the header from `in` (positioned at the file's start) of a file of `file_size` bytes;
// leaves `in` at the payload. A damaged, foreign or older header is a user error starting with
// "<path>: corrupt checkpoint:" or naming the header field.
CheckpointHeader read_checkpoint_header(std::istream& in, uint64_t file_size, const std::string& path);

}  // namespace protwin::rt
