// Report round trip and Chrome-trace structure (one track per stream, one counter per pool); the
// streamed writers against the whole documents dumped at once.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "traces/chrome_trace.h"
#include "traces/file_io.h"
#include "traces/record_spool.h"
#include "traces/report.h"

using namespace protwin;
using namespace protwin::traces;

namespace {
Report sample_report() {
  Report r;
  r.meta = {{"source", "sim"}};
  r.iteration = SimTime(3000);
  r.ops = {{0, "h2d", "h2d", SimTime(0), SimTime(1000)},
           {1, "forward", "compute", SimTime(1000), SimTime(3000)}};
  r.streams = {{"compute", SimTime(2000), 1}, {"h2d", SimTime(1000), 1}};
  PoolRecord gpu;
  gpu.name = "gpu";
  gpu.capacity = Bytes(1000);
  gpu.peak = Bytes(800);
  gpu.peak_at = SimTime(1000);
  gpu.curve = {{SimTime(0), Bytes(500)}, {SimTime(1000), Bytes(800)}, {SimTime(3000), Bytes(500)}};
  r.pools = {gpu};
  return r;
}
}  // namespace

TEST_CASE("a report round-trips through JSON byte for byte") {
  const Report r = sample_report();
  const std::string text = report_to_string(r);
  REQUIRE(report_to_string(report_from_json(nlohmann::json::parse(text), "r.json")) == text);
  REQUIRE(r.stream("h2d")->busy.ns == 1000);
  REQUIRE(r.pool("gpu")->peak.n == 800);
  REQUIRE(r.pool("pinned") == nullptr);
}

TEST_CASE("a report with end before start is refused") {
  auto j = report_to_json(sample_report());
  j["ops"][1]["end_ns"] = 10;
  REQUIRE_THROWS_WITH(report_from_json(j, "r.json"), "r.json:/ops/1/end_ns: op ends before it starts");
}

TEST_CASE("a report of another format or version is refused, naming the member") {
  auto j = report_to_json(sample_report());
  j["version"] = 7;
  REQUIRE_THROWS_WITH(report_from_json(j, "r.json"),
                      "r.json:/version: unsupported report version 7 (this protwin reads version 1)");
  j["format"] = "protwin.plan";
  REQUIRE_THROWS_WITH(report_from_json(j, "r.json"),
                      "r.json:/format: expected \"protwin.report\", got \"protwin.plan\"");
}

TEST_CASE("chrome trace: a named track per stream, X events in microseconds, a counter per pool") {
  const auto t = chrome_trace(sample_report());
  int threads = 0, slices = 0, counters = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") ++threads;
    if (e["ph"] == "X") {
      ++slices;
      if (e["args"]["op"] == 1) {
        REQUIRE(e["ts"].get<double>() == Approx(1.0));   // 1000 ns = 1 us
        REQUIRE(e["dur"].get<double>() == Approx(2.0));
        REQUIRE(e["tid"] == 1);                          // compute is the first stream
      }
    }
    if (e["ph"] == "C") {
      ++counters;
      REQUIRE(e["name"] == "pool gpu");
    }
  }
  REQUIRE(threads == 2);
  REQUIRE(slices == 2);
  REQUIRE(counters == 3);
}

TEST_CASE("write_chrome_trace streams the events: the same bytes as chrome_trace(report).dump()") {
  const std::string path = std::string(PROTWIN_BINARY_DIR) + "/tests/traces/streamed.trace.json";
  Report r = sample_report();
  for (int with_events = 1; with_events >= 0; --with_events) {
    if (!with_events) r = Report{};
    write_chrome_trace(r, path);
    REQUIRE(read_file(path) == chrome_trace(r).dump() + "\n");
  }
  std::remove(path.c_str());
}

TEST_CASE("a report and its trace written from records kept in a RecordSpool: the same bytes as from the Report") {
  // Oracles: report_to_string (the whole document dumped at once) and chrome_trace(report).dump().
  const std::string report_path = std::string(PROTWIN_BINARY_DIR) + "/tests/traces/spooled.report.json";
  const std::string trace_path = std::string(PROTWIN_BINARY_DIR) + "/tests/traces/spooled.trace.json";
  Report r = sample_report();
  r.ops[1].launch = {{SimTime(500), SimTime(900)}};  // host dispatch: a launch track and the hosts list
  r.hosts = {{"host", SimTime(400), 1}};
  for (int with_ops = 1; with_ops >= 0; --with_ops) {
    if (!with_ops) r.ops.clear();
    RecordSpool spool;
    for (const auto& op : r.ops) spool.add(op);
    REQUIRE(spool.size() == r.ops.size());
    Report rest = r;
    rest.ops.clear();
    const OpRecordVisitor ops = [&](const std::function<void(const OpRecord&)>& f) { spool.for_each(f); };
    write_report(rest, ops, report_path);
    CHECK(read_file(report_path) == report_to_string(r));
    write_chrome_trace(rest, ops, trace_path);  // visits the records twice (ops, then launches)
    CHECK(read_file(trace_path) == chrome_trace(r).dump() + "\n");
    write_report(r, report_path);  // the Report's own ops, streamed
    CHECK(read_file(report_path) == report_to_string(r));
  }
  std::remove(report_path.c_str());
  std::remove(trace_path.c_str());
}

TEST_CASE("a RecordSpool takes records in any order and gives them back in id order") {
  // Oracle: the records themselves, in id order. 1,000 records (four pages) added in a shuffled
  // order (as a streamed run's ops end), read back twice (a Chrome trace visits them twice).
  std::vector<OpRecord> ops;
  for (int i = 0; i < 1000; ++i) {
    ops.push_back({i, i % 3 ? "forward" : "h2d", "stage" + std::to_string(i % 7) + ".compute", SimTime(10 * i),
                   SimTime(10 * i + 5), std::nullopt});
    if (i % 5 == 0) ops.back().launch = {{SimTime(i), SimTime(i + 1)}};
  }
  std::vector<size_t> order(ops.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = (k * 389) % order.size();  // 389 is prime to 1000
  RecordSpool spool;
  for (size_t k : order) spool.add(ops[k]);
  CHECK(spool.size() == ops.size());
  CHECK(spool.peak_pages() <= 4);
  for (int pass = 0; pass < 2; ++pass) {
    size_t next = 0;
    spool.for_each([&](const OpRecord& r) {
      REQUIRE(next < ops.size());
      const OpRecord& want = ops[next++];
      CHECK(r.id == want.id);
      CHECK(r.kind == want.kind);
      CHECK(r.stream == want.stream);
      CHECK(r.start.ns == want.start.ns);
      CHECK(r.end.ns == want.end.ns);
      CHECK(r.launch == want.launch);
    });
    CHECK(next == ops.size());
  }
  // An id left out, or added twice, is an internal error (the run broke its contract).
  RecordSpool gap;
  gap.add(ops[0]);
  gap.add(ops[2]);
  CHECK_THROWS_WITH(gap.for_each([](const OpRecord&) {}), Catch::Contains("2 added, but ids up to 2"));
  RecordSpool twice;
  twice.add(ops[1]);
  CHECK_THROWS_WITH(twice.add(ops[1]), Catch::Contains("op record 1 added to the spool twice"));
  // Read, the spool is full: a later record would overwrite the pages it wrote.
  CHECK_THROWS_WITH(spool.add(ops[0]), Catch::Contains("op record 0 added to the spool after it was read"));
}
