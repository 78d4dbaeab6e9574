// Inputs at and past their limits, with the exact message a user sees: op kinds and chunk ids,
// memory effects that would overflow, non-finite and out-of-range numbers, Kineto events of the
// wrong type, output folders, and durations past the simulator's horizon.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "tests/traces/plan_fixtures.h"
#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/json_reader.h"
#include "traces/kineto_import.h"
#include "traces/plan.h"

using namespace protwin;
using namespace protwin::traces;

namespace {

Plan parse(const nlohmann::json& j) { return plan_from_json(j, "p.json"); }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    CHECK(e.exit_code() == 2);
    return e.what();
  }
  return "(no error)";
}

std::string kineto_error(const std::string& text) {
  const JsonDocument doc = JsonDocument::parse(text, "t.json");
  return error_of([&] { import_kineto(doc.root(), "t.json"); });
}

std::string scratch(const std::string& name) {
  return std::string(PROTWIN_BINARY_DIR) + "/tests/traces/limits_" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace

TEST_CASE("a plan's op kinds are the IR's, its chunk ids exist", "[plan][errors]") {
  auto j = small_plan_json();
  j["ops"][1]["kind"] = "teleport";
  CHECK(error_of([&] { parse(j); }) ==
        "p.json:/ops/1/kind: unknown op kind \"teleport\"; expected one of forward, backward, recompute, h2d, d2h, "
        "all_gather, reduce_scatter, all_reduce, broadcast, send_recv, adam_cpu, adam_device, host_cast, host_pass, "
        "alloc, free, arrive");
  for (const char* k : {"forward", "all_reduce", "send_recv", "host_pass", "alloc"})
    CHECK(to_string(op_kind_named(k)) == std::string(k));
  j = small_plan_json();
  j["ops"][0]["chunk"] = 99;
  CHECK(error_of([&] { parse(j); }) ==
        "p.json:/ops/0/chunk: chunk 99 does not exist: expected -1 (none) or a chunk id from 0 to 0");
  j["ops"][0]["chunk"] = -2;
  CHECK(error_of([&] { parse(j); }).rfind("p.json:/ops/0/chunk: chunk -2 does not exist", 0) == 0);
  j["ops"][0]["chunk"] = 0;
  CHECK(parse(j).ops[0].chunk == 0);
  j["chunks"] = nlohmann::json::array();
  CHECK(error_of([&] { parse(j); }) == "p.json:/ops/0/chunk: chunk 0 does not exist: the plan has no chunks");
  j["ops"][0]["chunk"] = -1;
  CHECK(parse(j).ops[0].chunk == -1);
}

TEST_CASE("memory effects that would overflow a pool are refused, not reported as 'below zero'", "[plan][errors]") {
  auto j = small_plan_json();
  j["ops"][0]["mem"][0]["delta_bytes"] = std::numeric_limits<int64_t>::max();
  CHECK(error_of([&] { parse(j); }) ==
        "p.json:/ops/0/mem/0/delta_bytes: expected an integer <= 1125899906842624, got integer 9223372036854775807");
  j = small_plan_json();
  j["meta"]["pools"][0]["capacity_bytes"] = int64_t{1} << 60;
  CHECK(error_of([&] { parse(j); }) ==
        "p.json:/meta/pools/0/capacity_bytes: expected an integer <= 1125899906842624, got integer "
        "1152921504606846976");
  // Plans built in memory skip the reader: validate() checks the same bound and the sum.
  Plan p = parse(small_plan_json());
  p.ops[0].mem[0].delta_bytes = std::numeric_limits<int64_t>::max();
  CHECK(error_of([&] { validate(p); }) ==
        "p.json:/ops/0 (h2d, stream h2d): memory effect of 9223372036854775807 bytes on pool gpu is out of range (at most "
        "1125899906842624 bytes either way)");
  p = parse(small_plan_json());
  for (int i = 0; i < 1100; ++i) {
    Op op = p.ops[1];
    op.id = static_cast<int>(p.ops.size());
    op.deps = {op.id - 1};
    op.reads.clear();
    op.mem = {{"gpu", kMaxPlanBytes, MemAt::kStart, -1}, {"gpu", -kMaxPlanBytes, MemAt::kEnd, -1}};
    p.ops.push_back(op);
  }
  CHECK(error_of([&] { validate(p); }).find(": the memory effects on pool gpu add up to more than 2^60 bytes") !=
        std::string::npos);
}

TEST_CASE("numbers are finite, ranged getters and unknown fields name the pointer", "[json][errors]") {
  nlohmann::json j = {{"a", std::numeric_limits<double>::infinity()}, {"b", 5}, {"c", -1.5}};
  const JsonNode n(&j, std::make_shared<const std::string>("x.json"), "");
  CHECK(error_of([&] { n.get_number("a"); }) == "x.json:/a: expected a finite number, got inf");
  CHECK(error_of([&] { n.get_int_in("b", 6, 9); }) == "x.json:/b: expected an integer >= 6, got integer 5");
  CHECK(error_of([&] { n.get_int_in("b", 0, 4); }) == "x.json:/b: expected an integer <= 4, got integer 5");
  CHECK(n.get_int_in("b", 5, 5) == 5);
  CHECK(error_of([&] { n.get_number_in("c", 0, 1); }) == "x.json:/c: expected a number >= 0, got number -1.5");
  CHECK(error_of([&] { n.check_keys({"a", "c"}); }) == "x.json:/: unknown field \"b\" (known: a, c)");
  CHECK(error_of([&] { JsonDocument::parse("{\"a\": 1e400}", "big.json"); }) ==
        "big.json: malformed JSON: number overflow parsing '1e400'");
}

TEST_CASE("Kineto events: objects with string names and durations >= 0", "[kineto][errors]") {
  CHECK(kineto_error("[1, 2]") == "t.json:/0: expected a trace event object {\"ph\", \"cat\", \"name\", ...}, got integer");
  CHECK(kineto_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 3}]})") ==
        "t.json:/traceEvents/0/name: expected a string, got integer 5");
  CHECK(kineto_error(R"({"traceEvents": [{"ph": "X", "cat": ["kernel"], "name": "k", "dur": 3}]})") ==
        "t.json:/traceEvents/0/cat: expected a string, got array [\"kernel\"]");
  CHECK(kineto_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -5}]})") ==
        "t.json:/traceEvents/0/dur: expected a number >= 0, got integer -5");
  CHECK(kineto_error(R"({"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "k", "ts": "1", "dur": 1}]})") ==
        "t.json:/traceEvents/0/ts: expected a number, got string \"1\"");
  CHECK(kineto_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 3}],
                         "deviceProperties": [{"name": 3}]})") ==
        "t.json:/deviceProperties/0/name: expected a string, got integer 3");
  CHECK(kineto_error(R"({"traceEvents": [], "deviceProperties": {"name": "x"}})") ==
        "t.json:/deviceProperties: expected an array, got object {\"name\":\"x\"}");
  // A good event with its device's name.
  const JsonDocument ok = JsonDocument::parse(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,
      "dur": 3, "args": {"device": 1}}], "deviceProperties": [{"id": 0, "name": "A"}, {"id": 1, "name": "B"}]})",
                                              "t.json");
  const OpProfile p = import_kineto(ok.root(), "t.json");
  CHECK(p.device() == "B");
  CHECK(p.size() == 1);
}

TEST_CASE("output files and folders are checked before any work", "[file_io][errors]") {
  const std::string dir = scratch("dir");
  ::mkdir(dir.c_str(), 0755);
  CHECK(error_of([&] { require_writable(dir, "-o"); }) == "-o " + dir + ": is a folder; expected a file name");
  CHECK(error_of([&] { require_writable(dir + "/no/x.json", "-o"); }) ==
        "-o " + dir + "/no/x.json: folder " + dir + "/no does not exist");
  CHECK_NOTHROW(require_writable(dir + "/x.json", "-o"));
  // A folder to create: its parents may be missing, a file may not be in the way.
  CHECK_NOTHROW(require_creatable_folder(dir + "/a/b/c", "-o"));
  const std::string file = dir + "/file";
  std::ofstream(file) << "x";
  CHECK(error_of([&] { require_creatable_folder(file + "/sub", "-o"); }) ==
        "-o " + file + "/sub: " + file + " exists and is not a folder");
  CHECK(error_of([&] { require_creatable_folder(file, "-o"); }) == "-o " + file + ": " + file +
                                                                        " exists and is not a folder");
  create_folders(dir + "/a/b/c", "-o");
  struct stat st {};
  CHECK((::stat((dir + "/a/b/c").c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
  CHECK(error_of([&] { create_folders(file + "/sub", "-o"); }).rfind("-o " + file + "/sub: cannot create folder (", 0) ==
        0);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("durations past the simulator's horizon saturate instead of overflowing", "[units]") {
  CHECK(from_seconds(1e300) == SimTime::max());
  CHECK(from_seconds(std::numeric_limits<double>::quiet_NaN()) == SimTime::max());
  CHECK(ceil_ns(static_cast<double>(kSimHorizonNs)) == SimTime::max());
  CHECK(ceil_ns(static_cast<double>(kSimHorizonNs) / 2) == SimTime(kSimHorizonNs / 2));
  CHECK(ceil_ns(10.0 / 3) == SimTime(4));
  CHECK(ceil_ns(1e-9) == SimTime(1));
  CHECK(from_seconds(-1) == SimTime(0));
}
