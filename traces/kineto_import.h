// Import of PyTorch profiler (Kineto) Chrome traces into an OpProfile (DESIGN §5).
//
// What becomes an entry, grouped by OpSignature (count, mean, min, max, population std, in µs):
//   cat "kernel"      kind from the kernel name (kernel_kind()); gemm/bmm shapes come from the
//                     launching ATen op (kernel -> cuda_runtime call by correlation id -> innermost
//                     cpu_op around that call on the same thread) when it is mm/addmm/bmm/baddbmm.
//                     Distinct kernel names of an entry are kept in its "names".
//   cat "gpu_memcpy"  h2d / d2h (pinned), h2d_pageable / d2h_pageable, d2d, p2p; shape {bytes},
//                     dtype "int8"; direction and host memory come from the event name
//                     ("Memcpy HtoD (Pinned -> Device)"), bytes from args.bytes.
//   cat "gpu_memset"  memset, shape {bytes}.
//   cat "cpu_op"      cpu:<name>, shape from args "Input Dims" (each input's rank, then its dims),
//                     dtype from the first tensor's "Input type"; first "input_dims" kept verbatim.
#pragma once

#include <string>

#include "traces/json_reader.h"
#include "traces/op_profile.h"

namespace protwin::traces {

struct KinetoImportOptions {
  bool cpu_ops = true;  // include host-side ATen ops (cat "cpu_op")
  std::string source;   // provenance source; default: the trace's file name
};

// Reads a .json or .json.gz trace (gzip is detected from the content, not the name).
OpProfile import_kineto(const std::string& path, const KinetoImportOptions& opts = {});
// Same for a parsed document; `root` is the trace object (or a bare array of events).
OpProfile import_kineto(const JsonNode& root, const std::string& file_name,
                        const KinetoImportOptions& opts = {});

// Reads a file and gunzips it when it starts with the gzip magic bytes (1f 8b).
std::string read_file_maybe_gzip(const std::string& path);
// The same for bytes already read from the file `name` (named in errors).
std::string maybe_gunzip(std::string data, const std::string& name);

// Kind of a GPU kernel by its name: gemm, conv, adam, flash_attention, layernorm, rmsnorm,
// softmax, all_reduce, all_gather, reduce_scatter, broadcast, send_recv; otherwise
// "kernel:<short name>". (bmm comes only from the launching op, never from a name.)
std::string kernel_kind(const std::string& kernel_name);
// Kernel name without "void " and the trailing parameter list.
std::string short_kernel_name(const std::string& kernel_name);
// Element type named in a kernel name (earliest type token), or "unknown".
std::string kernel_dtype(const std::string& kernel_name);
// PyTorch's "Input type" strings ("float", "c10::Half", ...) to protwin dtypes, or "unknown".
std::string dtype_from_torch(const std::string& torch_type);

// A trace event's members as import_kineto (and traces/host_dispatch_import.cpp) read them: a
// number (0 when absent), a string ("" when absent), a member of its "args" (nullptr when absent),
// and the thread it ran on (pid/tid as written: a number or a name).
double event_number(const nlohmann::json& e, const char* key);
std::string event_string(const nlohmann::json& e, const char* key);
const nlohmann::json* event_arg(const nlohmann::json& e, const char* key);
std::string event_thread(const nlohmann::json& e);

}  // namespace protwin::traces
