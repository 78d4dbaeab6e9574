// JSON reader diagnostics: every error names the file and the JSON pointer (DESIGN §9).
#include <catch2/catch.hpp>

#include "traces/error.h"
#include "traces/json_reader.h"

using protwin::Error;
using protwin::traces::JsonDocument;

TEST_CASE("malformed JSON names the file, line and column") {
  REQUIRE_THROWS_WITH(JsonDocument::parse("{\n  \"a\": 1,\n  \"b\": ]\n}", "x.json"),
                      "x.json: malformed JSON at line 3, column 8");
}

TEST_CASE("typed getters name the JSON pointer and what was expected") {
  auto doc = JsonDocument::parse(R"({"a": {"b/c": [1, "two"]}, "n": -3})", "f.json");
  auto root = doc.root();
  REQUIRE(root.at("a").at("b/c").at(size_t{0}).as_int() == 1);
  REQUIRE_THROWS_WITH(root.at("a").at("b/c").at(size_t{1}).as_int(),
                      "f.json:/a/b~1c/1: expected an integer, got string \"two\"");
  REQUIRE_THROWS_WITH(root.at("missing"), "f.json:/: missing required field \"missing\"");
  REQUIRE_THROWS_WITH(root.get_nonneg_int("n"), "f.json:/n: expected an integer >= 0, got integer -3");
  REQUIRE_THROWS_WITH(root.at("a").size(), "f.json:/a: expected an array, got object {\"b/c\":[1,\"two\"]}");
}

TEST_CASE("missing file is a user error naming the path") {
  try {
    JsonDocument::load("/nonexistent/plan.json");
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(std::string(e.what()).rfind("/nonexistent/plan.json: cannot open for reading", 0) == 0);
    REQUIRE(e.exit_code() == 2);
  }
}
