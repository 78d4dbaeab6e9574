// Op records kept in a temporary file as a run hands them out, in any order, and read back in id
// order: what a streamed report or Chrome trace holds until the run's end fixes the fields written
// before the ops (iteration, hosts). Each record has a fixed size (48 bytes) and its place in the
// file is its id, so records that end out of id order are not held back in memory: only the pages
// of 256 records that some, but not all, of their ops have reached (about as many as the run's
// ops in flight span). Ids must be 0 ... n-1, each added once; for_each checks it. The kinds and
// streams, a few names, are kept in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
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

  // Not after for_each (the pages it wrote would be overwritten).
  void add(const OpRecord& r);
  // Every record added so far, in id order; the spool is full from then on.
  void for_each(const std::function<void(const OpRecord&)>& f) const;
  uint64_t size() const { return n_; }
  // The most pages held in memory at once (each kPageRecords records).
  uint64_t peak_pages() const { return peak_pages_; }
  static constexpr uint64_t kPageRecords = 256;

 private:
  struct Page;
  int intern(std::vector<std::string>& names, std::unordered_map<std::string, int>& index, const std::string& name);
  void write_page(uint64_t page, const Page& p) const;
  std::FILE* file_ = nullptr;
  uint64_t n_ = 0, end_ = 0;  // records added; one past the largest id
  mutable std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;  // partly filled, by page number
  uint64_t peak_pages_ = 0;
  mutable bool read_ = false;  // for_each ran
  std::vector<std::string> kinds_, streams_;
  std::unordered_map<std::string, int> kind_index_, stream_index_;
};

}  // namespace protwin::traces
