// Op records kept in a temporary file as a run hands them out, and read back in the same order:
// what a streamed report or Chrome trace holds until the run's end fixes the fields written before
// the ops (iteration, hosts). About 50 bytes per op on disk; the kinds and streams, a few names,
// in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/report.h"

namespace protwin::traces {

class RecordSpool {
 public:
  RecordSpool();
  ~RecordSpool();
  RecordSpool(const RecordSpool&) = delete;
  RecordSpool& operator=(const RecordSpool&) = delete;

  void add(const OpRecord& r);
  // Every record added so far, in order.
  void for_each(const std::function<void(const OpRecord&)>& f) const;
  uint64_t size() const { return n_; }

 private:
  int intern(std::vector<std::string>& names, std::unordered_map<std::string, int>& index, const std::string& name);
  std::FILE* file_ = nullptr;
  uint64_t n_ = 0;
  std::vector<std::string> kinds_, streams_;
  std::unordered_map<std::string, int> kind_index_, stream_index_;
};

}  // namespace protwin::traces
