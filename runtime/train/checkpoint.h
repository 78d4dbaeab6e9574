// Training checkpoints: model weights, Adam m and v (flat fp32, stored_parameters order, so a checkpoint
// written under one plan resumes under another plan of the same model), step and data position.
//
// One file, DIR/checkpoint.bin: a header (checkpoint_header.h: magic, length, JSON with a checksum
// over the header and the payload), then the payload (params, m, v). It is written to DIR/checkpoint.bin.tmp, fsync'ed and renamed, so a
// crash while writing leaves the previous checkpoint intact. Reading checks magic, sizes and the
// checksum; a damaged file is a user error naming it. Runtime header: includes ATen.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace protwin::rt {

struct Checkpoint {
  int64_t step = 0;            // optimizer steps done
  int64_t data_position = 0;   // where the next batch starts
  uint64_t seed = 0;
  nlohmann::json model_spec;   // the plan's meta.model_spec
  at::Tensor params, exp_avg, exp_avg_sq;  // 1-D fp32, same length
};

std::string checkpoint_path(const std::string& dir);

// Creates `dir` if needed.
void write_checkpoint(const std::string& dir, const Checkpoint& ck);
Checkpoint read_checkpoint(const std::string& dir);

// Test hook: called once with the number of payload bytes written so far, halfway through writing
// the payload; throwing from it simulates a crash mid-write. Empty by default.
void set_checkpoint_write_hook(std::function<void(int64_t)> hook);

}  // namespace protwin::rt
