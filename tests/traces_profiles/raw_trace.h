// Test oracle helper: reads a gzipped Kineto trace with zlib's gz* API and nlohmann directly,
// independently of the importer's code path.
#pragma once

#include <zlib.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace protwin::test {

inline nlohmann::json read_raw_trace(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return nlohmann::json::parse(text);
}

inline std::string data_path(const std::string& name) {
  return std::string(PROTWIN_SOURCE_DIR) + "/tests/data/" + name;
}

}  // namespace protwin::test
