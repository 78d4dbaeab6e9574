#include "traces/record_spool.h"

#include <cerrno>
#include <cstring>

#include "traces/error.h"

namespace protwin::traces {

namespace {

struct Packed {
  int64_t start, end, launch_start, launch_end;
  int32_t id, kind, stream, has_launch;
};

}  // namespace

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

void RecordSpool::add(const OpRecord& r) {
  Packed p{r.start.ns, r.end.ns, r.launch ? r.launch->first.ns : 0, r.launch ? r.launch->second.ns : 0,
           r.id, intern(kinds_, kind_index_, r.kind), intern(streams_, stream_index_, r.stream), r.launch ? 1 : 0};
  PROTWIN_CHECK(std::fwrite(&p, sizeof p, 1, file_) == 1, "temporary file for the op records: write failed (",
                std::strerror(errno), ")");
  ++n_;
}

void RecordSpool::for_each(const std::function<void(const OpRecord&)>& f) const {
  PROTWIN_CHECK(std::fflush(file_) == 0 && std::fseek(file_, 0, SEEK_SET) == 0,
                "temporary file for the op records: cannot read it back (", std::strerror(errno), ")");
  Packed p{};
  OpRecord r;
  for (uint64_t k = 0; k < n_; ++k) {
    PROTWIN_CHECK(std::fread(&p, sizeof p, 1, file_) == 1, "temporary file for the op records: read failed after ",
                  k, " of ", n_, " records");
    r.id = p.id;
    r.kind = kinds_[static_cast<size_t>(p.kind)];
    r.stream = streams_[static_cast<size_t>(p.stream)];
    r.start = SimTime(p.start);
    r.end = SimTime(p.end);
    r.launch = p.has_launch ? std::optional<std::pair<SimTime, SimTime>>({SimTime(p.launch_start), SimTime(p.launch_end)})
                            : std::nullopt;
    f(r);
  }
  PROTWIN_CHECK(std::fseek(file_, 0, SEEK_END) == 0, "temporary file for the op records: cannot append again");
}

}  // namespace protwin::traces
