// The zoo's JSON files (sim/workload/models/*.json), embedded at build time by CMakeLists.txt
// so that `protwin` works from any folder.
#pragma once

#include <vector>

namespace protwin::sim {

struct EmbeddedModelFile {
  const char* file;  // file name, e.g. "gpt2-small.json"
  const char* text;  // its JSON
};

const std::vector<EmbeddedModelFile>& embedded_model_files();

}  // namespace protwin::sim
