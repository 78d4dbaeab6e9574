#include "traces/record_spool.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "traces/error.h"

namespace protwin::traces {

namespace {

struct Packed {
  int64_t start, end, launch_start, launch_end;
  int32_t id, kind, stream, flags;  // kLaunch | kWritten (a hole in the file reads as 0)
};
static_assert(sizeof(Packed) == 48, "fixed-size records: a record's place in the file is its id");
constexpr int32_t kLaunch = 1, kWritten = 2;

}  // namespace

struct RecordSpool::Page {
  std::array<Packed, kPageRecords> records{};
  uint64_t filled = 0;
};

RecordSpool::RecordSpool() : file_(std::tmpfile()) {
  PROTWIN_CHECK(file_ != nullptr, "temporary file for the op records: cannot create (", std::strerror(errno), ")");
}

RecordSpool::~RecordSpool() { std::fclose(file_); }

int RecordSpool::intern(std::vector<std::string>& names, std::unordered_map<std::string, int>& index,
                        const std::string& name) {
  auto [it, added] = index.emplace(name, static_cast<int>(names.size()));
  if (added) names.push_back(name);
  return it->second;
}

void RecordSpool::write_page(uint64_t page, const Page& p) const {
  const auto bytes = static_cast<size_t>(sizeof(Packed) * kPageRecords);
  const auto offset = static_cast<off_t>(page * bytes);
  size_t done = 0;
  const auto* data = reinterpret_cast<const char*>(p.records.data());
  while (done < bytes) {
    const ssize_t w = ::pwrite(fileno(file_), data + done, bytes - done, offset + static_cast<off_t>(done));
    PROTWIN_CHECK(w > 0 || (w < 0 && errno == EINTR), "temporary file for the op records: write failed (",
                  std::strerror(errno), ")");
    if (w > 0) done += static_cast<size_t>(w);
  }
}

void RecordSpool::add(const OpRecord& r) {
  PROTWIN_ASSERT(r.id >= 0, "op record with id ", r.id, " for the spool");
  PROTWIN_ASSERT(!read_, "op record ", r.id, " added to the spool after it was read");
  const auto id = static_cast<uint64_t>(r.id);
  const uint64_t page = id / kPageRecords;
  auto& slot = pages_[page];
  if (!slot) {
    slot = std::make_unique<Page>();
    peak_pages_ = std::max<uint64_t>(peak_pages_, pages_.size());
  }
  Packed& p = slot->records[id % kPageRecords];
  PROTWIN_ASSERT(!(p.flags & kWritten), "op record ", r.id, " added to the spool twice");
  p = Packed{r.start.ns, r.end.ns, r.launch ? r.launch->first.ns : 0, r.launch ? r.launch->second.ns : 0,
             r.id, intern(kinds_, kind_index_, r.kind), intern(streams_, stream_index_, r.stream),
             kWritten | (r.launch ? kLaunch : 0)};
  ++n_;
  end_ = std::max(end_, id + 1);
  if (++slot->filled == kPageRecords) {  // complete: to the file
    write_page(page, *slot);
    pages_.erase(page);
  }
}

void RecordSpool::for_each(const std::function<void(const OpRecord&)>& f) const {
  PROTWIN_ASSERT(n_ == end_, "op records for the spool: ", n_, " added, but ids up to ", end_ - 1);
  read_ = true;
  for (const auto& [page, p] : pages_) write_page(page, *p);  // the last page (the rest would fail below)
  pages_.clear();
  PROTWIN_CHECK(std::fseek(file_, 0, SEEK_SET) == 0, "temporary file for the op records: cannot read it back (",
                std::strerror(errno), ")");
  Packed p{};
  OpRecord r;
  for (uint64_t k = 0; k < n_; ++k) {
    PROTWIN_CHECK(std::fread(&p, sizeof p, 1, file_) == 1, "temporary file for the op records: read failed after ",
                  k, " of ", n_, " records");
    PROTWIN_ASSERT((p.flags & kWritten) && p.id == static_cast<int32_t>(k), "op record ", k, " missing in the spool");
    r.id = p.id;
    r.kind = kinds_[static_cast<size_t>(p.kind)];
    r.stream = streams_[static_cast<size_t>(p.stream)];
    r.start = SimTime(p.start);
    r.end = SimTime(p.end);
    r.launch = (p.flags & kLaunch) ? std::optional<std::pair<SimTime, SimTime>>({SimTime(p.launch_start), SimTime(p.launch_end)})
                                   : std::nullopt;
    f(r);
  }
}

}  // namespace protwin::traces
