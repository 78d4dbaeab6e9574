// Inputs that once crashed or misled the readers (issue #20): each is refused as a user error
// naming the file and the JSON pointer, and outputs never replace a special file or a link.
// Oracles: the exact messages, the file system's state afterwards.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "traces/error.h"
#include "traces/file_io.h"
#include "traces/json_reader.h"
#include "traces/plan.h"

using protwin::Error;
using protwin::traces::JsonDocument;
namespace fs = std::filesystem;

namespace {
std::string scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("protwin_hardening_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST_CASE("JSON nested 100,000 deep is refused naming the pointer, not a stack overflow", "[traces][hardening]") {
  const int n = 100000;
  const std::string text = "{\"format\":\"protwin.plan\",\"version\":4,\"meta\":{},\"streams\":[],\"ops\":[" +
                           std::string(n, '[') + std::string(n, ']') + "]}";
  REQUIRE_THROWS_WITH(JsonDocument::parse(text, "d.json"),
                      "d.json:/ops/0/0/0/0/0/0/0/0/0/0/0/...: nested deeper than 256 levels");
  // At the limit it parses.
  const std::string ok = std::string(256, '[') + std::string(256, ']');
  CHECK(JsonDocument::parse(ok, "ok.json").json().is_array());
  CHECK_THROWS_WITH(JsonDocument::parse("[" + ok + "]", "deep.json"),
                    "deep.json:/0/0/0/0/0/0/0/0/0/0/0/0/...: nested deeper than 256 levels");
}

TEST_CASE("a key given twice in one object is refused naming the object", "[traces][hardening]") {
  CHECK_THROWS_WITH(JsonDocument::parse(R"({"version": 1, "version": 2})", "p.json"),
                    "p.json:/: duplicate key \"version\"");
  CHECK_THROWS_WITH(JsonDocument::parse(R"({"ops": [{"id": 0}, {"id": 1, "kind": "h2d", "id": 1}]})", "p.json"),
                    "p.json:/ops/1: duplicate key \"id\"");
  // Past the first 16 keys the set takes over; still caught.
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"k" + std::to_string(i) + "\": 0, ";
  CHECK_THROWS_WITH(JsonDocument::parse(big + "\"k33\": 1}", "b.json"), "b.json:/: duplicate key \"k33\"");
  CHECK(JsonDocument::parse(big + "\"k40\": 1}", "b.json").json().size() == 41);
  // The same key in sibling objects is fine.
  CHECK(JsonDocument::parse(R"([{"a": 1}, {"a": 2}])", "s.json").json().size() == 2);
}

TEST_CASE("null is a value of the wrong type, never an absent field", "[traces][hardening]") {
  const JsonDocument doc = JsonDocument::parse(R"({"n": null, "s": "é"})", "n.json");
  CHECK(doc.root().has("n"));
  CHECK_THROWS_WITH(doc.root().get_int("n", 7), "n.json:/n: expected an integer, got null");
  CHECK_THROWS_WITH(doc.root().get_string("n", "x"), "n.json:/n: expected a string, got null");
  CHECK(doc.root().get_int("absent", 7) == 7);
}

TEST_CASE("values in messages are short, whole UTF-8 characters, whatever their size", "[traces][hardening]") {
  using protwin::traces::describe_json;
  using protwin::traces::utf8_prefix;
  CHECK(describe_json(nlohmann::json::parse("[1,2]")) == "array [1,2]");
  CHECK(describe_json(nlohmann::json()) == "null");
  nlohmann::json big = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  CHECK(describe_json(big) == "array [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,1...");
  // "é" is two bytes: a cut at byte 1 of it backs up to before it.
  CHECK(utf8_prefix("aé", 2) == "a");
  CHECK(utf8_prefix("aé", 3) == "aé");
  CHECK(utf8_prefix("日本", 4) == "日");
  // The 37-byte cut falls inside 日: the text ends before it.
  const std::string name(35, 'x');
  CHECK(describe_json(name + "日本語") == "string \"" + name + "...");
}

TEST_CASE("an integer past 2^63 is refused, not wrapped negative", "[traces][hardening]") {
  const JsonDocument doc = JsonDocument::parse(R"({"n": 18446744073709551615})", "u.json");
  CHECK_THROWS_WITH(doc.root().get_nonneg_int("n"),
                    "u.json:/n: expected an integer below 2^63, got integer 18446744073709551615");
}

TEST_CASE("a folder or an endless device given as an input is refused naming it", "[traces][hardening]") {
  const std::string dir = scratch("a_folder");
  fs::create_directories(dir);
  CHECK_THROWS_WITH(JsonDocument::load(dir), dir + ": is a folder; expected a file");
  CHECK_THROWS_WITH(protwin::traces::read_file("/dev/zero"),
                    "/dev/zero: more than 256 MiB from a file that is not a regular file");
}

TEST_CASE("post-parse plan errors name the file and the op's pointer", "[traces][hardening]") {
  const std::string text = R"({"format": "protwin.plan", "version": 4, "meta": {},
    "streams": ["compute"], "ops": [{"id": 0, "kind": "forward", "stream": "compute"},
                                    {"id": 1, "kind": "forward", "stream": "gpu0"}]})";
  const protwin::traces::Plan plan = protwin::traces::plan_from_json(nlohmann::json::parse(text), "p.json");
  CHECK_THROWS_WITH(protwin::traces::validate(plan), "p.json:/ops/1 (forward, stream gpu0): unknown stream \"gpu0\"");
}

TEST_CASE("outputs are written through a symbolic link, and special files are never replaced", "[traces][hardening]") {
  using protwin::traces::write_file_atomic;
  const std::string target = scratch("target.json"), link = scratch("link.json");
  std::ofstream(target) << "old";
  fs::remove(link);
  fs::create_symlink(target, link);
  write_file_atomic(link, "new");
  CHECK(fs::is_symlink(link));
  CHECK(slurp(target) == "new");
  // A dangling link creates its target.
  const std::string dangling = scratch("dangling.json"), later = scratch("later.json");
  fs::remove(dangling);
  fs::remove(later);
  fs::create_symlink(later, dangling);
  write_file_atomic(dangling, "x");
  CHECK(fs::is_symlink(dangling));
  CHECK(slurp(later) == "x");
  // /dev/full stays a device (as root, rename would have replaced it).
  CHECK_THROWS_WITH(write_file_atomic("/dev/full", "x"),
                    "/dev/full: is not a regular file (a device, pipe or socket); refusing to replace it");
  struct stat st {};
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK_THROWS_WITH(protwin::traces::require_writable("/dev/full", "-o"),
                    "-o /dev/full: is not a regular file (a device, pipe or socket); refusing to replace it");
  fs::remove_all(fs::path(target).parent_path());
}
