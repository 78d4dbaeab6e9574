// Fuzz target: a kernel table imported as `protwin import-table` does, then written and read back
// as an op profile. The input's leading lines "--format F", "--per-octave N", "--ranks N",
// "--device D" and "--name FILE" are the command's flags (the name matters to nccl-tests); the
// rest is the table's bytes (CSV, or gzip of it). A profile that import-table writes and protwin
// cannot read back is a finding.
#include <climits>
#include <cstdlib>

#include "fuzz_target.h"
#include "traces/op_profile.h"
#include "traces/table_import.h"

namespace {

// The int in "--flag N", or `fallback` when it is not one (the CLI's parser refuses those).
int flag_int(const std::string& value, int fallback) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  return !value.empty() && *end == '\0' && v >= INT_MIN && v <= INT_MAX ? static_cast<int>(v) : fallback;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return protwin::fuzz::fuzz_one(data, size, [](const std::string& text) {
    using namespace protwin;
    traces::TableImportOptions opts;
    traces::TableBytes table{"fuzz.csv", ""};
    size_t pos = 0;
    while (text.compare(pos, 2, "--") == 0) {
      const size_t nl = text.find('\n', pos);
      const size_t end = nl == std::string::npos ? text.size() : nl;
      const std::string line = text.substr(pos + 2, end - pos - 2);
      const size_t space = line.find(' ');
      const std::string flag = line.substr(0, space), value = space == std::string::npos ? "" : line.substr(space + 1);
      if (flag == "format") opts.format = value;
      else if (flag == "per-octave") opts.per_octave = flag_int(value, 0);
      else if (flag == "ranks") opts.ranks = flag_int(value, 0);
      else if (flag == "device") opts.device = value;
      else if (flag == "name") table.name = value;
      pos = nl == std::string::npos ? text.size() : nl + 1;
    }
    table.bytes = text.substr(pos);
    const traces::OpProfile profile = traces::import_table({table}, opts);
    const std::string written = profile.to_json().dump();
    try {
      traces::OpProfile::parse(written, "fuzz.profile.json");
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz: import-table wrote a profile protwin cannot read: %s\n", e.what());
      std::abort();
    }
  });
}
