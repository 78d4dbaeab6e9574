#include "hwmodels/probe/probe_options.h"

#include <cerrno>
#include <cstdlib>

#include <boost/algorithm/string/split.hpp>

#include "traces/error.h"

namespace protwin::hw::probe {

namespace {

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  PROTWIN_CHECK(!text.empty() && end && *end == '\0' && errno == 0 && v >= min, flag,
                ": expected an integer >= ", min, ", got \"", text, "\"");
  return v;
}

// "a,,b" -> {"a", "", "b"}: an empty piece is kept, for parse_int to refuse.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  return boost::algorithm::split(out, s, [](char c) { return c == ','; });
}

}  // namespace

std::string probe_usage() {
  return "usage: protwin-probe [-o fragment.json] [options]\n\n"
         "Measures this machine's GPUs (cuBLAS GEMM by size and dtype, HBM bandwidth by size,\n"
         "pinned and pageable H2D/D2H alone and both at once, kernel launch floor, peer copies)\n"
         "and writes a protwin machine-file fragment with provenance \"measured\".\n\n"
         "options:\n"
         "  -o, --output FILE     write the fragment here (default: stdout)\n"
         "  --device N            GPU to measure (default 0)\n"
         "  --quick               fewer sizes and repetitions\n"
         "  --repeats N           timed repetitions per point, median kept (default 10)\n"
         "  --max-bytes N         largest copy buffer in bytes (default 1073741824)\n"
         "  --gemm-sizes A,B,...  square GEMM sizes n (default 128..8192 by powers of 2)\n"
         "  --dtypes A,B,...      of fp32, tf32, fp16, bf16 (default all)\n"
         "  --no-peers            skip GPU-to-GPU copies\n"
         "  -h, --help            show this help\n\n"
         "exit codes: 0 ok, 1 internal error, 2 user error or no GPU\n";
}

ProbeOptions parse_probe_options(const std::vector<std::string>& args) {
  ProbeOptions o;
  bool repeats_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      PROTWIN_CHECK(i + 1 < args.size(), a, ": expected a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "-o" || a == "--output") {
      o.output = value();
    } else if (a == "--device") {
      o.device = static_cast<int>(parse_int(a, value(), 0));
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--repeats") {
      o.repeats = static_cast<int>(parse_int(a, value(), 1));
      repeats_set = true;
    } else if (a == "--max-bytes") {
      o.max_copy_bytes = parse_int(a, value(), 4096);
    } else if (a == "--gemm-sizes") {
      for (const auto& s : split(value())) o.gemm_sizes.push_back(parse_int(a, s, 1));
    } else if (a == "--dtypes") {
      for (const auto& s : split(value())) {
        PROTWIN_CHECK(s == "fp32" || s == "tf32" || s == "fp16" || s == "bf16", a,
                      ": expected fp32, tf32, fp16 or bf16, got \"", s, "\"");
        o.dtypes.push_back(s);
      }
    } else if (a == "--no-peers") {
      o.peers = false;
    } else {
      PROTWIN_CHECK(false, a, ": unknown option\nhint: see 'protwin-probe --help'");
    }
  }
  if (o.quick && !repeats_set) o.repeats = 3;
  if (o.gemm_sizes.empty() && o.quick) o.gemm_sizes = {256, 1024, 4096};
  if (o.gemm_sizes.empty()) o.gemm_sizes = {128, 256, 512, 1024, 2048, 4096, 8192};
  if (o.dtypes.empty()) o.dtypes = {"fp32", "tf32", "fp16", "bf16"};
  return o;
}

std::vector<int64_t> copy_sizes(const ProbeOptions& o) {
  std::vector<int64_t> s;
  const int64_t step = o.quick ? 16 : 4;
  for (int64_t b = 4096; b <= o.max_copy_bytes; b *= step) s.push_back(b);
  if (s.empty() || s.back() != o.max_copy_bytes) s.push_back(o.max_copy_bytes);
  return s;
}

}  // namespace protwin::hw::probe
