// protwin search-4d: the counts add up, the layouts are ranked by simulated tokens/s, every
// listed layout is one simulate-4d gives the same numbers for, and the flags are checked.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/cli/run_protwin.h"

namespace {
const std::string kSmall = "'llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000'";
}  // namespace

TEST_CASE("search-4d --json: counts, ranking, and the top layout equals simulate-4d", "[cli][4d]") {
  const auto r = run_protwin("search-4d --model " + kSmall +
                             " --machine dgx-a100 --nodes 2 --seq 1024 --gbs 64 --mbs-max 2 --top 5 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& n = j["counts"];
  int64_t rejected = 0;
  for (const auto& [k, v] : n["rejected_by_reason"].items()) rejected += v.get<int64_t>();
  CHECK(n["enumerated"].get<int64_t>() == n["fit"].get<int64_t>() + rejected);
  CHECK(n["fit"].get<int64_t>() ==
        n["simulated"].get<int64_t>() + n["failed"].get<int64_t>() + n["over_mbs_max"].get<int64_t>());
  const auto& rows = j["configurations"];
  REQUIRE(rows.size() == std::min<size_t>(5, n["simulated"].get<size_t>()));
  REQUIRE(!rows.empty());
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i]["mbs"].get<int64_t>() <= 2);
    CHECK(rows[i]["fits_80pct"] == true);
    CHECK(rows[i]["tokens_per_s"].get<double>() == Approx(64.0 * 1024 / rows[i]["iteration_s"].get<double>()));
    if (i > 0) CHECK(rows[i]["tokens_per_s"].get<double>() <= rows[i - 1]["tokens_per_s"].get<double>());
  }
  const auto& best = rows[0];
  const auto s = run_protwin("simulate-4d --model " + kSmall + " --machine dgx-a100 --nodes 2 --seq 1024 --gbs 64" +
                             " --tp " + best["tp"].dump() + " --cp " + best["cp"].dump() + " --pp " + best["pp"].dump() +
                             " --dp " + best["dp"].dump() + " --mbs " + best["mbs"].dump() + " --json");
  REQUIRE(s.code == 0);
  CHECK(nlohmann::json::parse(s.out)["iteration_s"] == best["iteration_s"]);
}

TEST_CASE("search-4d table and flag errors", "[cli][4d][errors]") {
  const auto t = run_protwin("search-4d --model " + kSmall + " --machine dgx-a100 --nodes 1 --seq 512 --gbs 16 --top 3");
  REQUIRE(t.code == 0);
  CHECK(t.out.find("layouts:") != std::string::npos);
  CHECK(t.out.find("TFLOPS/GPU") != std::string::npos);
  auto r = run_protwin("search-4d --model " + kSmall + " --machine dgx-a100 --gbs 16");
  CHECK(r.code == 2);
  CHECK(r.err == "protwin search-4d: error: --nodes is required\n");
  r = run_protwin("search-4d --model " + kSmall + " --machine dgx-a100 --nodes 1 --gbs 16 --top 0");
  CHECK(r.code == 2);
  CHECK(r.err == "protwin search-4d: error: --top 0: must be at least 1\n");
}

TEST_CASE("search-4d --uneven-stages: the one-short-ends layouts, each equal to simulate-4d and estimate with the "
          "flags", "[cli][4d][stages]") {
  // 6 layers: PP 4 divides 6 + 2, so stages of 1, 2, 2, 1 layers join the even PP 1, 2, 3, 6.
  const std::string six = "'llama:hidden=512,layers=6,heads=8,kv_heads=4,vocab=1000'";
  const auto r = run_protwin("search-4d --model " + six + " --machine dgx-a100 --nodes 1 --seq 1024 --gbs 16 "
                             "--mbs-max 1 --uneven-stages --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto plain = run_protwin("search-4d --model " + six + " --machine dgx-a100 --nodes 1 --seq 1024 --gbs 16 "
                                 "--mbs-max 1 --json");
  REQUIRE(plain.code == 0);
  CHECK(j["counts"]["fit"].get<int64_t>() > nlohmann::json::parse(plain.out)["counts"]["fit"].get<int64_t>());
  const nlohmann::json* uneven = nullptr;
  for (const auto& row : j["configurations"]) {
    if (!row.contains("stage_layers")) {
      CHECK(row["pp"].get<int64_t>() != 4);
      continue;
    }
    CHECK(row["pp"] == 4);
    CHECK(row["stage_layers"] == nlohmann::json{{"first", 1}, {"last", 1}});
    uneven = &row;
  }
  REQUIRE(uneven);
  const auto& u = *uneven;
  const auto s = run_protwin("simulate-4d --model " + six + " --machine dgx-a100 --nodes 1 --seq 1024 --gbs 16" +
                             " --tp " + u["tp"].dump() + " --cp " + u["cp"].dump() + " --pp 4 --dp " + u["dp"].dump() +
                             " --mbs 1 --first-stage-layers 1 --last-stage-layers 1 --json --no-collective-sms");
  REQUIRE(s.code == 0);
  const auto sj = nlohmann::json::parse(s.out);
  CHECK(sj["iteration_s"] == u["iteration_s"]);  // search-4d leaves the collectives' SM share off by default
  CHECK(sj["config"]["stage_layers"] == u["stage_layers"]);
  const auto e = run_protwin("estimate --model " + six + " --seq 1024 --mbs 1 --tp " + u["tp"].dump() + " --cp " +
                             u["cp"].dump() + " --pp 4 --dp " + u["dp"].dump() + " --num-microbatches " +
                             sj["config"]["microbatches"].dump() + " --first-stage-layers 1 --last-stage-layers 1 --json");
  REQUIRE(e.code == 0);
  CHECK(sj["memory_GiB"].get<double>() == Approx(nlohmann::json::parse(e.out)["total_GiB"].get<double>()));
  // Splits that do not fit name the flag, exit 2.
  auto bad = run_protwin("simulate-4d --model " + six + " --machine dgx-a100 --pp 4 --dp 2 --gbs 16 --seq 1024 "
                         "--first-stage-layers 2");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--first-stage-layers: the other 3 stages cannot split the remaining 4 layers") !=
        std::string::npos);
  bad = run_protwin("simulate-4d --model " + six + " --machine dgx-a100 --pp 4 --dp 2 --gbs 16 --seq 1024 --vpp 2 "
                    "--first-stage-layers 1 --last-stage-layers 1");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("non-interleaved") != std::string::npos);
}
