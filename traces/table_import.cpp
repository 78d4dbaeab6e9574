#include "traces/table_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/kineto_import.h"

namespace protwin::traces {

namespace {

// One CSV line split into fields; double quotes protect commas ("" is a quote).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  for (auto& f : out) {  // trim blanks
    const size_t b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
    f = b == std::string::npos ? "" : f.substr(b, e - b + 1);
  }
  return out;
}

// Offset of the first byte of `s` that is not well-formed UTF-8 (Unicode Table 3-7: no overlong
// forms, surrogates or code points past U+10FFFF, as nlohmann::json requires to write a string),
// or npos when all of it is.
size_t utf8_error_at(const std::string& s) {
  auto byte = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  for (size_t i = 0; i < s.size();) {
    const unsigned c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte; later bytes are 80..BF.
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return i;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
    i += len;
  }
  return std::string::npos;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The rank count in an nccl-tests table's file name, "8gpu" or "GPU8" in any case (vTrain's
// AR_GPU8_..., a100_all_reduce_8gpu...); 0 when there is none. Not std::regex: GCC 12 warns
// (-Wmaybe-uninitialized) inside <regex> under the sanitised build.
int ranks_in_name(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto digits = [&](size_t b, size_t e) { return e > b && e - b <= 6 ? std::stoi(lower.substr(b, e - b)) : 0; };
  for (size_t p = lower.find("gpu"); p != std::string::npos; p = lower.find("gpu", p + 1)) {
    size_t b = p;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(lower[b - 1]))) --b;
    if (const int n = digits(b, p)) return n;
    size_t e = p + 3;
    while (e < lower.size() && std::isdigit(static_cast<unsigned char>(lower[e]))) ++e;
    if (const int n = digits(p + 3, e)) return n;
  }
  return 0;
}

constexpr double kMaxMs = 1e9;

// A CSV file's data rows, with the header (when it has one) as a column index.
struct CsvTable {
  std::string file;   // for errors
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  size_t column(const std::string& name) const {
    auto it = std::find(header.begin(), header.end(), name);
    PROTWIN_CHECK(it != header.end(), file, ": no column \"", name, "\" in the header");
    return static_cast<size_t>(it - header.begin());
  }
  bool has_column(const std::string& name) const {
    return std::find(header.begin(), header.end(), name) != header.end();
  }
  // Row r (0-based data row) is data row r + 1 in messages.
  const std::string& field(size_t r, size_t c) const {
    PROTWIN_CHECK(c < rows[r].size(), file, ": row ", r + 1, ": expected at least ", c + 1, " fields, got ",
                  rows[r].size());
    return rows[r][c];
  }
  // Field c of row r as a number, without its last `unit_chars` characters (a unit such as "ms").
  double number(size_t r, size_t c, size_t unit_chars = 0) const {
    const std::string& f = field(r, c);
    const std::string s = f.substr(0, f.size() - std::min(unit_chars, f.size()));
    std::string what = header.empty() ? "field " + std::to_string(c + 1) : "column \"" + header[c] + "\"";
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    PROTWIN_CHECK(!s.empty() && end == s.c_str() + s.size() && std::isfinite(v), file, ": row ", r + 1, " ", what,
                  ": expected a finite number, got \"", f, "\"");
    return v;
  }
  double nonneg(size_t r, size_t c, size_t unit_chars = 0) const {
    const double v = number(r, c, unit_chars);
    PROTWIN_CHECK(v >= 0, file, ": row ", r + 1, " column ", c + 1, ": expected a number >= 0, got ", v);
    return v;
  }
  // A kernel time in ms: finite, >= 0 and below 1e9 ms (11 days), so its µs, variance and pooled
  // statistics stay finite.
  double time_ms(size_t r, size_t c, size_t unit_chars = 0) const {
    const double v = nonneg(r, c, unit_chars);
    PROTWIN_CHECK(v <= kMaxMs, file, ": row ", r + 1, " column ", c + 1, ": expected a time below 1e9 ms, got ", v);
    return v;
  }
  // a * b for sizes of row r; a shape past 2^62 elements is no kernel's and would overflow.
  int64_t times(size_t r, int64_t a, int64_t b) const {
    int64_t out = 0;
    PROTWIN_CHECK(!__builtin_mul_overflow(a, b, &out) && out <= (int64_t{1} << 62), file, ": row ", r + 1,
                  ": sizes too large (", a, " x ", b, ")");
    return out;
  }
  int64_t positive_int(size_t r, size_t c) const {
    const double v = number(r, c);
    PROTWIN_CHECK(v >= 1 && v <= 9.0e15 && std::floor(v) == v, file, ": row ", r + 1, " column ", c + 1,
                  ": expected an integer >= 1, got ", field(r, c));
    return static_cast<int64_t>(v);
  }
};

// The sizes of each series kept by TableImportOptions::per_octave: sorted, the smallest first,
// then each next size at least 2^(1/per_octave) above the last kept, every power of two and the largest.
class Thinning {
 public:
  explicit Thinning(int per_octave) : step_(per_octave > 0 ? std::pow(2.0, 1.0 / per_octave) : 0) {}
  void offer(const std::string& series, int64_t size) { sizes_[series].push_back(size); }
  bool keep(const std::string& series, int64_t size) {
    if (step_ <= 0) return true;
    auto it = kept_.find(series);
    if (it == kept_.end()) {
      std::vector<int64_t>& s = sizes_[series];
      std::sort(s.begin(), s.end());
      std::vector<int64_t> k;
      for (int64_t v : s) {
        const bool power_of_two = (v & (v - 1)) == 0;  // the sizes people ask for are always kept
        if (k.empty() || (v != k.back() && (power_of_two || static_cast<double>(v) >= static_cast<double>(k.back()) * step_ - 1e-9)))
          k.push_back(v);
      }
      if (!s.empty() && k.back() != s.back()) k.push_back(s.back());  // the largest measured size too
      it = kept_.emplace(series, std::move(k)).first;
    }
    return std::binary_search(it->second.begin(), it->second.end(), size);
  }

 private:
  double step_;
  std::map<std::string, std::vector<int64_t>> sizes_, kept_;
};

CsvTable read_csv(const TableBytes& table, bool has_header) {
  const std::string& path = table.name;
  CsvTable t;
  t.file = path;
  std::istringstream in(maybe_gunzip(table.bytes, path));
  std::string line;
  bool first = true;
  for (size_t n = 1; std::getline(in, line); ++n) {
    // Text fields (op and kernel names) go into the profile's JSON, which must be UTF-8.
    const size_t bad = utf8_error_at(line);
    PROTWIN_CHECK(bad == std::string::npos, path, ": line ", n, " byte ", bad + 1, ": not UTF-8 text");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (first && has_header) {
      t.header = split_csv(line);
    } else {
      t.rows.push_back(split_csv(line));
    }
    first = false;
  }
  PROTWIN_CHECK(!t.rows.empty(), path, ": no data rows");
  return t;
}

struct Importer {
  const TableImportOptions& opts;
  OpProfile& profile;

  // Adds one measured entry; ms -> µs. `std_ms` < 0: unknown.
  void add(const std::string& kind, std::vector<int64_t> shape, const std::string& dtype, double mean_ms,
           double min_ms, double max_ms, double std_ms, const std::string& file, size_t row, double bytes = 0,
           nlohmann::json extra = nlohmann::json::object()) {
    PROTWIN_CHECK(mean_ms > 0, file, ": row ", row, " (", kind, "): expected a time > 0, got ", mean_ms, " ms");
    PROTWIN_ASSERT(mean_ms <= kMaxMs && max_ms <= kMaxMs && std_ms <= kMaxMs, "times are checked by CsvTable::time_ms");
    OpProfileEntry e;
    e.sig = OpSignature{kind, std::move(shape), dtype};
    e.us.count = 1;
    e.us.mean = mean_ms * 1e3;
    e.us.min = std::min(min_ms * 1e3, e.us.mean);
    e.us.max = std::max(max_ms * 1e3, e.us.mean);
    e.us.m2 = std_ms > 0 ? std::pow(std::round(std_ms * 1e6) / 1e3, 2) : 0;  // to 1 ns
    if (bytes > 0) e.bytes = bytes;
    e.source = opts.source.substr(0, opts.source.find(' '));  // the project; the paths are in the file's provenance
    e.provenance = "measured";
    e.extra = std::move(extra);
    e.extra["file"] = base_name(file);
    e.extra["row"] = row;
    profile.add(std::move(e));
  }

  void vidur(const CsvTable& t) {
    if (t.has_column("collective")) return vidur_network(t);
    const size_t heads = t.column("n_head"), kv_heads = t.column("n_kv_head"), hidden = t.column("n_embd"),
                 ffn = t.column("n_expanded_embd"), tokens = t.column("num_tokens"),
                 tp = t.column("num_tensor_parallel_workers"), gated = t.column("use_gated_mlp");
    const int64_t e = 2;  // fp16
    Thinning thin(opts.per_octave);
    for (size_t r = 0; r < t.rows.size(); ++r) thin.offer(t.field(r, tp), t.positive_int(r, tokens));
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const int64_t a = t.positive_int(r, heads), kv = t.positive_int(r, kv_heads), h = t.positive_int(r, hidden),
                    f = t.positive_int(r, ffn), n = t.positive_int(r, tokens), p = t.positive_int(r, tp);
      if (!thin.keep(t.field(r, tp), n)) continue;
      PROTWIN_CHECK(h % a == 0, t.file, ": row ", r + 1,
                    ": n_embd must be a multiple of n_head, got ", h, " and ", a);
      const int64_t d = h / a;
      // Tensor parallelism shards the heads and the FFN evenly; a degree that does not divide
      // them would give fractional (or zero) GEMM sizes.
      PROTWIN_CHECK(h % p == 0 && f % p == 0, t.file, ": row ", r + 1, ": num_tensor_parallel_workers ", p,
                    " must divide n_embd (", h, ") and n_expanded_embd (", f, ")");
      const bool is_gated = t.field(r, gated) == "True" || t.field(r, gated) == "true" || t.field(r, gated) == "1";
      auto op = [&](const std::string& name, const std::string& kind, std::vector<int64_t> shape, double bytes) {
        const std::string pre = "time_stats." + name + ".";
        if (!t.has_column(pre + "mean")) return;
        add(kind, std::move(shape), "fp16", t.time_ms(r, t.column(pre + "mean")), t.time_ms(r, t.column(pre + "min")),
            t.time_ms(r, t.column(pre + "max")), t.time_ms(r, t.column(pre + "std")), t.file, r + 1, bytes,
            {{"op", name}, {"median_us", t.time_ms(r, t.column(pre + "median")) * 1e3}, {"tp", p}, {"tokens", n}});
      };
      const int64_t qkv = t.times(r, a + 2 * kv, d) / p, ff = f / p, nh = t.times(r, n, h);
      auto gemm_bytes = [&](double m, double nn, double k) { return e * (m * k + k * nn + m * nn); };
      op("attn_pre_proj", "gemm", {n, qkv, h}, gemm_bytes(n, qkv, h));
      op("attn_post_proj", "gemm", {n, h, a * d / p}, gemm_bytes(n, h, a * d / p));
      const int64_t up = is_gated ? 2 * ff : ff;
      op("mlp_up_proj", "gemm", {n, up, h}, gemm_bytes(n, up, h));
      op("mlp_down_proj", "gemm", {n, h, ff}, gemm_bytes(n, h, ff));
      op("input_layernorm", "rmsnorm", {nh}, 2.0 * e * n * h);
      op("post_attention_layernorm", "rmsnorm", {nh}, 2.0 * e * n * h);
      op("mlp_act", is_gated ? "swiglu" : "gelu", {t.times(r, n, ff)}, (is_gated ? 3.0 : 2.0) * e * n * ff);
      op("attn_rope", "rope", {t.times(r, t.times(r, n, a + kv), d) / p}, 2.0 * e * n * (a + kv) * d / p);
      op("add", "elementwise", {nh}, 3.0 * e * n * h);
      op("emb", "embedding", {nh}, 2.0 * e * n * h);
    }
  }

  void vidur_network(const CsvTable& t) {
    const size_t kind = t.column("collective"), workers = t.column("num_workers"), size = t.column("size"),
                 per_node = t.column("devices_per_node");
    Thinning thin(opts.per_octave);
    auto series = [&](size_t r) { return t.field(r, kind) + ":" + t.field(r, workers) + ":" + t.field(r, per_node); };
    for (size_t r = 0; r < t.rows.size(); ++r) thin.offer(series(r), t.positive_int(r, size));
    for (size_t r = 0; r < t.rows.size(); ++r) {
      if (!thin.keep(series(r), t.positive_int(r, size))) continue;
      const std::string k = t.field(r, kind);
      PROTWIN_CHECK(k == "all_reduce" || k == "send_recv" || k == "all_gather" || k == "reduce_scatter", t.file,
                    ": row ", r + 1, " column \"collective\": expected all_reduce, send_recv, all_gather or "
                    "reduce_scatter, got \"", k, "\"");
      const std::string pre = "time_stats." + k + ".";
      const int64_t bytes = t.positive_int(r, size), ranks = t.positive_int(r, workers),
                    rpn = t.positive_int(r, per_node);
      add(k, {bytes, ranks, std::min(rpn, ranks)}, "int8", t.time_ms(r, t.column(pre + "mean")),
          t.time_ms(r, t.column(pre + "min")), t.time_ms(r, t.column(pre + "max")), t.time_ms(r, t.column(pre + "std")),
          t.file, r + 1, static_cast<double>(bytes), {{"median_us", t.time_ms(r, t.column(pre + "median")) * 1e3}});
    }
  }

  void neusight(const CsvTable& t) {
    const size_t opname = t.column("OPName"), latency = t.column("Latency"), device = t.column("Device"),
                 kernel = t.column("Kernel Name");
    const int64_t e = 4;  // fp32
    for (size_t r = 0; r < t.rows.size(); ++r) {
      if (!opts.device.empty() && t.field(r, device) != opts.device) continue;
      const std::string op = t.field(r, opname);
      const double ms = t.time_ms(r, latency);
      nlohmann::json extra = {{"op", op}, {"kernel", short_kernel_name(t.field(r, kernel))}};
      if (t.has_column("Grid x"))
        extra["grid"] = {t.positive_int(r, t.column("Grid x")), t.positive_int(r, t.column("Grid y")),
                         t.positive_int(r, t.column("Grid z"))};
      if (op == "linear" || op == "bmm") {
        const int64_t b = t.positive_int(r, t.column("B")), m = t.positive_int(r, t.column("M")),
                      n = t.positive_int(r, t.column("N")), k = t.positive_int(r, t.column("K"));
        const double bytes = static_cast<double>(e * b) * (static_cast<double>(m) * k + static_cast<double>(k) * n +
                                                            static_cast<double>(m) * n);
        // NeuSight's N is the reduction (neusight/Dataset/collect.py: nn.Linear(N, K) on [B, M, N],
        // torch.bmm of [B, M, N] and [B, N, K]; the kernels' grids tile M x K): protwin's {m, n, k}
        // is C[m, n] = A[m, k] B[k, n], so {M, K, N}.
        if (op == "linear") {
          PROTWIN_CHECK(b == 1, t.file, ": row ", r + 1, " column \"B\": a linear row needs B = 1, got ", b);
          add("gemm", {m, k, n}, "fp32", ms, ms, ms, -1, t.file, r + 1, bytes, extra);
        } else {
          add("bmm", {b, m, k, n}, "fp32", ms, ms, ms, -1, t.file, r + 1, bytes, extra);
        }
        continue;
      }
      const int64_t elems = t.times(r, t.positive_int(r, t.column("B")), t.positive_int(r, t.column("H")));
      std::string kind = "elementwise";
      double passes = 3;  // binary: two reads, one write
      if (op == "ln") {
        kind = "layernorm";
        passes = 2;
      } else if (op == "softmax") {
        kind = "softmax";
        passes = 2;
      } else if (op == "gelu" || op == "relu" || op == "tanh" || (!op.empty() && op.back() == 'u')) {
        passes = 2;  // unary (the "...u" ops take a scalar)
      }
      if (op == "gelu") kind = "gelu";
      if (kind == "elementwise") kind += "." + op;  // add, mul, divu, ... stay apart (their passes differ)
      add(kind, {elems}, "fp32", ms, ms, ms, -1, t.file, r + 1, passes * e * static_cast<double>(elems), extra);
    }
  }

  void llmcompass(const CsvTable& t) {
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const std::string& ms = t.field(r, 3);
      PROTWIN_CHECK(ms.size() > 2 && ms.compare(ms.size() - 2, 2, "ms") == 0, t.file, ": row ", r + 1,
                    " field 4: expected a time like \"0.1900ms\", got \"", ms, "\"");
      const int64_t m = t.positive_int(r, 0), n = t.positive_int(r, 1), k = t.positive_int(r, 2);
      const double v = t.time_ms(r, 3, 2);
      add("gemm", {m, n, k}, "fp16", v, v, v, -1, t.file, r + 1,
          2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n));
    }
  }

  void nccl_tests(const CsvTable& t, const std::string& path) {
    int ranks = opts.ranks;
    if (ranks <= 0) {
      ranks = ranks_in_name(base_name(path));
      PROTWIN_CHECK(ranks > 0, path, ": cannot tell the number of ranks from the file name; give --ranks");
    }
    PROTWIN_CHECK(ranks >= 2, path, ": expected at least 2 ranks, got ", ranks);
    const size_t size = t.column("size(B)"), time = t.column("time(ns)");
    Thinning thin(opts.per_octave);
    for (size_t r = 0; r < t.rows.size(); ++r) thin.offer("", t.positive_int(r, size));
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const int64_t bytes = t.positive_int(r, size);
      if (!thin.keep("", bytes)) continue;
      const double ms = t.time_ms(r, time) * 1e-6;
      add("all_reduce", {bytes, ranks, ranks}, "int8", ms, ms, ms, -1, t.file, r + 1, static_cast<double>(bytes),
          {{"type", t.field(r, t.column("type"))}});
    }
  }
};

// The project a format's tables come from ("" for a format import_table does not know).
std::string default_source(const std::string& format) {
  if (format == "vidur") return "microsoft/vidur";
  if (format == "neusight") return "sitar-lab/NeuSight";
  if (format == "llmcompass") return "PrincetonUniversity/LLMCompass";
  return format == "nccl-tests" ? "NVIDIA/nccl-tests" : "";
}

}  // namespace

OpProfile import_table(const std::vector<std::string>& paths, const TableImportOptions& opts) {
  std::vector<TableBytes> tables;
  for (const auto& path : paths) tables.push_back({path, read_file(path)});
  return import_table(tables, opts);
}

OpProfile import_table(const std::vector<TableBytes>& tables, const TableImportOptions& opts_in) {
  PROTWIN_CHECK(!default_source(opts_in.format).empty(), "--format: expected vidur, neusight, llmcompass or "
                "nccl-tests, got \"", opts_in.format, "\"");
  PROTWIN_CHECK(opts_in.ranks >= 0, "--ranks: expected an integer >= 0, got ", opts_in.ranks);
  PROTWIN_CHECK(opts_in.per_octave >= 0 && opts_in.per_octave <= 1000,
                "--per-octave: expected an integer in [0, 1000], got ", opts_in.per_octave);
  PROTWIN_CHECK(!tables.empty(), "import-table: expected at least one FILE");
  // These strings go into the profile's JSON, which must be UTF-8.
  PROTWIN_CHECK(utf8_error_at(opts_in.device) == std::string::npos, "--device: not UTF-8 text");
  PROTWIN_CHECK(utf8_error_at(opts_in.source) == std::string::npos, "--source: not UTF-8 text");
  for (const auto& table : tables)
    PROTWIN_CHECK(utf8_error_at(base_name(table.name)) == std::string::npos, "import-table: the file name \"",
                  utf8_prefix(table.name, 60), "\" is not UTF-8 text");
  TableImportOptions opts = opts_in;
  if (opts.source.empty()) opts.source = default_source(opts.format);
  OpProfile profile(opts.device.empty() ? "unknown" : opts.device, "measured", opts.source);
  Importer im{opts, profile};
  for (const auto& table : tables) {
    const CsvTable t = read_csv(table, opts.format != "llmcompass");
    if (opts.format == "vidur") im.vidur(t);
    else if (opts.format == "neusight") im.neusight(t);
    else if (opts.format == "llmcompass") im.llmcompass(t);
    else im.nccl_tests(t, table.name);
  }
  PROTWIN_CHECK(profile.size() > 0, "import-table: no rows imported",
                opts.device.empty() ? "" : " (no rows of device \"" + opts.device + "\")");
  return profile;
}

}  // namespace protwin::traces
