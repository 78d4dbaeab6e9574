#include "traces/kineto_import.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/kernel_kinds.h"

namespace protwin::traces {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

constexpr size_t kMaxTraceBytes = size_t{1} << 30;

std::string gunzip(const std::string& data, const std::string& path) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header (not raw zlib).
  PROTWIN_ASSERT(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, "inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > kMaxTraceBytes) {  // a trace this big would not fit in memory once parsed
      inflateEnd(&zs);
      PROTWIN_CHECK(false, path, ": more than ", kMaxTraceBytes >> 20, " MiB uncompressed");
    }
    // Concatenated gzip members are legal: continue with the next one.
    if (rc == Z_STREAM_END && zs.avail_in > 0) rc = inflateReset(&zs);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // input ended early
  }
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  PROTWIN_CHECK(rc == Z_STREAM_END, path, ": corrupt gzip data (",
                rc == Z_BUF_ERROR ? "truncated" : msg.empty() ? "zlib error" : msg, ")");
  return out;
}

// ---- Event views --------------------------------------------------------------------------

struct Ev {
  const nlohmann::json* j;
  double ts, dur;
};

// Innermost cpu_op around each cuda_runtime call, per thread, by a sweep over nested intervals.
class LaunchingOps {
 public:
  void add_op(const nlohmann::json& e) {
    threads_[event_thread(e)].ops.push_back({&e, event_number(e, "ts"), event_number(e, "dur")});
  }
  void add_call(const nlohmann::json& e) {
    const nlohmann::json* c = event_arg(e, "correlation");
    if (!c || !c->is_number_integer()) return;
    threads_[event_thread(e)].calls.push_back({&e, event_number(e, "ts"), event_number(e, "dur")});
  }
  void resolve() {
    for (auto& [tid, t] : threads_) {
      // Outer intervals first at equal start.
      std::sort(t.ops.begin(), t.ops.end(), [](const Ev& a, const Ev& b) {
        return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
      });
      std::sort(t.calls.begin(), t.calls.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
      std::vector<const Ev*> stack;
      size_t next = 0;
      for (const Ev& call : t.calls) {
        while (next < t.ops.size() && t.ops[next].ts <= call.ts) {
          const Ev& op = t.ops[next++];
          while (!stack.empty() && stack.back()->ts + stack.back()->dur < op.ts) stack.pop_back();
          stack.push_back(&op);
        }
        while (!stack.empty() && stack.back()->ts + stack.back()->dur < call.ts + call.dur)
          stack.pop_back();
        if (!stack.empty())
          by_correlation_[(*event_arg(*call.j, "correlation")).get<int64_t>()] = stack.back()->j;
      }
    }
  }
  const nlohmann::json* for_correlation(int64_t c) const {
    auto it = by_correlation_.find(c);
    return it == by_correlation_.end() ? nullptr : it->second;
  }

 private:
  struct Thread {
    std::vector<Ev> ops, calls;
  };
  std::map<std::string, Thread> threads_;
  std::unordered_map<int64_t, const nlohmann::json*> by_correlation_;
};

// "Input Dims" entry as a plain int vector, if it is one.
bool int_dims(const nlohmann::json& d, std::vector<int64_t>& out) {
  if (!d.is_array()) return false;
  out.clear();
  for (const auto& x : d) {
    if (!x.is_number_integer()) return false;
    out.push_back(x.get<int64_t>());
  }
  return true;
}

std::string op_dtype(const nlohmann::json& op) {
  const nlohmann::json* types = event_arg(op, "Input type");
  if (!types || !types->is_array()) return "unknown";
  for (const auto& t : *types) {
    if (!t.is_string()) continue;
    const std::string d = dtype_from_torch(t.get<std::string>());
    if (d != "unknown") return d;
  }
  return "unknown";
}

// gemm {m, n, k} / bmm {b, m, n, k} from the launching ATen op, when its dims say so.
bool gemm_shape(const nlohmann::json& op, std::string& kind, std::vector<int64_t>& shape) {
  const nlohmann::json* dims = event_arg(op, "Input Dims");
  if (!dims || !dims->is_array()) return false;
  const std::string name = event_string(op, "name");
  size_t a_idx;
  if (name == "aten::mm" || name == "aten::bmm") a_idx = 0;
  else if (name == "aten::addmm" || name == "aten::baddbmm") a_idx = 1;
  else return false;
  if (dims->size() < a_idx + 2) return false;
  std::vector<int64_t> a, b;
  if (!int_dims((*dims)[a_idx], a) || !int_dims((*dims)[a_idx + 1], b)) return false;
  if (a.size() == 2 && b.size() == 2 && a[1] == b[0]) {
    kind = kernel_kinds::kGemm;
    shape = {a[0], b[1], a[1]};
    return true;
  }
  if (a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1]) {
    kind = kernel_kinds::kBmm;
    shape = {a[0], a[1], b[2], a[2]};
    return true;
  }
  return false;
}

struct Group {
  OpProfileEntry entry;
  std::set<std::string> names;
};

class Grouper {
 public:
  explicit Grouper(std::string source) : source_(std::move(source)) {}
  void add(OpSignature sig, double dur_us, std::optional<double> bytes, const std::string& name,
           const nlohmann::json* input_dims, const nlohmann::json* input_types) {
    const std::string key = sig.key();
    auto [it, fresh] = groups_.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      g.entry.sig = std::move(sig);
      g.entry.bytes = bytes;
      g.entry.source = source_;
      if (input_dims) g.entry.extra["input_dims"] = *input_dims;
      if (input_types) g.entry.extra["input_types"] = *input_types;
      order_.push_back(key);
    }
    g.entry.us.add(dur_us);
    if (!name.empty()) g.names.insert(name);
  }
  void emit(OpProfile& p) {
    for (const auto& key : order_) {
      Group& g = groups_[key];
      if (!g.names.empty()) g.entry.extra["names"] = std::vector<std::string>(g.names.begin(), g.names.end());
      p.add(std::move(g.entry));
    }
  }

 private:
  std::string source_;
  std::map<std::string, Group> groups_;
  std::vector<std::string> order_;
};

// "Memcpy HtoD (Pinned -> Device)" -> "h2d"; "Memcpy DtoH (Device -> Pageable)" -> "d2h_pageable".
std::string memcpy_kind(const std::string& name) {
  const bool pinned = contains(name, "Pinned"), pageable = contains(name, "Pageable");
  const char* host = pinned ? "" : pageable ? "_pageable" : "_unknown";
  if (contains(name, "HtoD")) return std::string("h2d") + host;
  if (contains(name, "DtoH")) return std::string("d2h") + host;
  if (contains(name, "DtoD")) return "d2d";
  if (contains(name, "PtoP")) return "p2p";
  if (contains(name, "HtoH")) return "h2h";
  return "memcpy:" + name;
}

// The name of the device the first GPU event ran on (the first device's otherwise) from
// deviceProperties: [{"id", "name", ...}]; every entry must be an object with a string name.
std::string device_name(const JsonNode& root, const nlohmann::json* first_gpu_event) {
  if (!root.is_object() || !root.has("deviceProperties")) return "unknown";
  const JsonNode props = root.at("deviceProperties");
  if (props.size() == 0) return "unknown";  // size() fails naming the pointer unless an array
  int64_t want = 0;
  if (first_gpu_event) {
    const nlohmann::json* d = event_arg(*first_gpu_event, "device");
    if (d && d->is_number_integer()) want = d->get<int64_t>();
  }
  std::string first;
  for (size_t i = 0; i < props.size(); ++i) {
    const JsonNode p = props.at(i);
    if (!p.is_object()) p.fail("expected a device object {\"id\", \"name\", ...}, got " + std::string(json_type_name(p.raw())));
    const std::string name = p.get_string("name", "unknown");
    const auto id = p.raw().find("id");
    if (id != p.raw().end() && id->is_number_integer() && id->get<int64_t>() == want) return name;
    if (i == 0) first = name;
  }
  return first;
}

}  // namespace

double event_number(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string event_string(const nlohmann::json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

const nlohmann::json* event_arg(const nlohmann::json& e, const char* key) {
  auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return nullptr;
  auto it = a->find(key);
  return it == a->end() ? nullptr : &*it;
}

std::string event_thread(const nlohmann::json& e) {
  auto pid = e.find("pid"), tid = e.find("tid");
  return (pid != e.end() ? pid->dump() : "") + "/" + (tid != e.end() ? tid->dump() : "");
}

std::string read_file_maybe_gzip(const std::string& path) { return maybe_gunzip(read_file(path), path); }

std::string maybe_gunzip(std::string data, const std::string& path) {
  const bool gz = data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
                  static_cast<unsigned char>(data[1]) == 0x8b;
  if (gz) return gunzip(data, path);
  PROTWIN_CHECK(path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0, path,
                ": not a gzip file (expected the gzip magic bytes 1f 8b)");
  return data;
}

std::string short_kernel_name(const std::string& kernel_name) {
  std::string s = kernel_name;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      else if (s[i] == '(' && --depth == 0) {
        if (i > 0) s = s.substr(0, i);
        break;
      }
    }
  }
  return s;
}

std::string kernel_kind(const std::string& kernel_name) {
  const std::string n = lower(kernel_name);
  if (contains(n, "nccl")) {
    if (contains(n, "allreduce")) return kernel_kinds::kAllReduce;
    if (contains(n, "allgather")) return kernel_kinds::kAllGather;
    if (contains(n, "reducescatter")) return kernel_kinds::kReduceScatter;
    if (contains(n, "broadcast")) return kernel_kinds::kBroadcast;
    if (contains(n, "sendrecv")) return kernel_kinds::kSendRecv;
  }
  if (contains(n, "adam")) return kernel_kinds::kAdam;
  if (contains(n, "flash_fwd") || contains(n, "flash_bwd") || contains(n, "flash_attn") ||
      contains(n, "fmha"))
    return kernel_kinds::kFlashAttention;
  if (!contains(n, "fbgemm")) {
    // cuDNN convolutions are implicit GEMMs: keep them apart from matrix multiplies.
    if (contains(n, "implicit_gemm") || contains(n, "scudnn") || contains(n, "winograd") ||
        contains(n, "dgrad") || contains(n, "wgrad") || contains(n, "conv"))
      return "conv";
    if (contains(n, "gemm")) return kernel_kinds::kGemm;
  }
  if (contains(n, "layer_norm") || contains(n, "layernorm")) return kernel_kinds::kLayernorm;
  if (contains(n, "rms_norm") || contains(n, "rmsnorm")) return kernel_kinds::kRmsnorm;
  if (contains(n, "softmax")) return kernel_kinds::kSoftmax;
  return "kernel:" + short_kernel_name(kernel_name);
}

std::string kernel_dtype(const std::string& kernel_name) {
  const std::string n = lower(short_kernel_name(kernel_name));
  // cuBLAS / CUTLASS tile names carry the type as a prefix letter of the MMA shape.
  static const std::pair<const char*, const char*> kTokens[] = {
      {"bfloat16", "bf16"}, {"bf16", "bf16"},   {"c10::half", "fp16"}, {"__half", "fp16"},
      {"hgemm", "fp16"},    {"h1688", "fp16"},  {"h16816", "fp16"},    {"fp16", "fp16"},
      {"double", "fp64"},   {"dgemm", "fp64"},  {"sgemm", "fp32"},     {"s1688", "fp32"},
      {"s16816", "fp32"},   {"tf32", "fp32"},   {"fp32", "fp32"},      {"float", "fp32"},
      {"int8_t", "int8"},   {"i8816", "int8"},  {"int64_t", "int64"},  {"<long", "int64"}};
  size_t best = std::string::npos;
  std::string dtype = "unknown";
  for (const auto& [tok, d] : kTokens) {
    const size_t pos = n.find(tok);
    if (pos < best) {
      best = pos;
      dtype = d;
    }
  }
  return dtype;
}

std::string dtype_from_torch(const std::string& t) {
  if (t == "float") return "fp32";
  if (t == "double") return "fp64";
  if (t == "c10::Half") return "fp16";
  if (t == "c10::BFloat16") return "bf16";
  if (t == "long int" || t == "long") return "int64";
  if (t == "int") return "int32";
  if (t == "bool") return "bool";
  if (t == "signed char") return "int8";
  if (t == "unsigned char") return "uint8";
  if (t.rfind("c10::Float8", 0) == 0) return "fp8";
  return "unknown";
}

OpProfile import_kineto(const std::string& path, const KinetoImportOptions& opts) {
  const JsonDocument doc = JsonDocument::parse(read_file_maybe_gzip(path), path);
  return import_kineto(doc.root(), std::filesystem::path(path).filename().string(), opts);
}

OpProfile import_kineto(const JsonNode& root, const std::string& file_name,
                        const KinetoImportOptions& opts) {
  const JsonNode events = root.is_array() ? root : root.at("traceEvents");
  const size_t n = events.size();  // fails with "expected an array" when it is not one

  // Every event is an object whose ph, cat and name are strings, and a complete ("X") event of
  // the categories read here has a duration >= 0 (its start, if any, is a number). The cpu_ops
  // and runtime calls go to `launching`, which finds the ATen op that launched each kernel.
  LaunchingOps launching;
  const nlohmann::json* first_gpu = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const JsonNode e = events.at(i);
    if (!e.is_object())
      e.fail("expected a trace event object {\"ph\", \"cat\", \"name\", ...}, got " +
             std::string(json_type_name(e.raw())));
    const std::string cat = e.get_string("cat", "");
    e.get_string("name", "");
    if (e.get_string("ph", "") != "X") continue;
    const bool timed = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cpu_op";
    if (timed && !(e.has("dur") && e.raw()["dur"].is_number()))
      e.fail("expected a \"dur\" number on a complete (\"X\") event");
    if (timed || cat == "cuda_runtime") {
      if (e.has("dur")) e.get_nonneg_number("dur");  // µs: fails naming /dur when negative
      if (e.has("ts")) e.get_number("ts");
      // Threads are keyed by pid/tid as written: a number or a name, never a container.
      for (const char* key : {"pid", "tid"})
        if (auto id = e.find(key); id && !id->raw().is_number() && !id->raw().is_string())
          id->fail("expected a number or a string, got " + std::string(json_type_name(id->raw())));
    }
    if (cat == "cpu_op") launching.add_op(e.raw());
    else if (cat == "cuda_runtime") launching.add_call(e.raw());
    else if (!first_gpu && (cat == "kernel" || cat == "gpu_memcpy")) first_gpu = &e.raw();
  }
  launching.resolve();

  const std::string source = opts.source.empty() ? "kineto:" + file_name : opts.source;
  Grouper gpu(source), cpu(source);
  for (const auto& e : events.raw()) {
    if (event_string(e, "ph") != "X") continue;
    const std::string cat = event_string(e, "cat");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset" && cat != "cpu_op") continue;
    const double dur = e["dur"].get<double>();
    const std::string name = event_string(e, "name");

    OpSignature sig;
    if (cat == "kernel") {
      const std::string shortname = short_kernel_name(name);
      sig.kind = kernel_kind(name);
      sig.dtype = kernel_dtype(name);
      const nlohmann::json* corr = event_arg(e, "correlation");
      const nlohmann::json* op =
          corr && corr->is_number_integer() ? launching.for_correlation(corr->get<int64_t>()) : nullptr;
      if (op && op_dtype(*op) != "unknown") sig.dtype = op_dtype(*op);
      if (sig.kind == kernel_kinds::kGemm && op) gemm_shape(*op, sig.kind, sig.shape);
      gpu.add(std::move(sig), dur, std::nullopt, shortname, nullptr, nullptr);
    } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
      sig.kind = cat == "gpu_memset" ? "memset" : memcpy_kind(name);
      sig.dtype = "int8";
      std::optional<double> bytes;
      const nlohmann::json* b = event_arg(e, "bytes");
      if (b && b->is_number_integer() && b->get<int64_t>() >= 0) {
        bytes = b->get<double>();
        sig.shape = {b->get<int64_t>()};
      }
      gpu.add(std::move(sig), dur, bytes, name, nullptr, nullptr);
    } else if (opts.cpu_ops) {
      sig.kind = "cpu:" + name;
      const nlohmann::json* dims = event_arg(e, "Input Dims");
      if (dims && dims->is_array()) {
        std::vector<int64_t> d;
        for (const auto& in : *dims) {
          if (int_dims(in, d) && std::all_of(d.begin(), d.end(), [](int64_t x) { return x >= 0; })) {
            sig.shape.push_back(static_cast<int64_t>(d.size()));
            sig.shape.insert(sig.shape.end(), d.begin(), d.end());
          } else {
            sig.shape.push_back(0);  // tensor lists and the like: see input_dims
          }
        }
      }
      sig.dtype = op_dtype(e);
      cpu.add(std::move(sig), dur, std::nullopt, "", dims, event_arg(e, "Input type"));
    }
  }

  OpProfile p(device_name(root, first_gpu), "measured", source);
  nlohmann::json prov = p.provenance();
  prov["note"] = "imported from a PyTorch profiler (Kineto) trace by protwin import-kineto; " +
                 std::string(opts.cpu_ops ? "GPU kernels, copies, memsets and CPU ATen ops"
                                          : "GPU kernels, copies and memsets");
  p.set_provenance(prov);
  gpu.emit(p);
  cpu.emit(p);
  return p;
}

}  // namespace protwin::traces
