// The collectives' cost line fitted from probe rows (runtime/profile/collective_fit.h). Oracle:
// synthetic rows on an exact line give that line back; the machine writer carries the fit with
// measured provenance.
#include <catch2/catch.hpp>

#include "runtime/profile/collective_fit.h"
#include "runtime/profile/host_measurements.h"
#include "traces/error.h"

using namespace protwin::rt;

TEST_CASE("fit_collectives: exact on synthetic linear rows, per kind") {
  std::vector<CollectiveRow> rows;
  for (double b : {8192.0, 131072.0, 524288.0, 2097152.0}) {
    rows.push_back({"all_gather", b, 150e-6 + b / 0.8e9});
    rows.push_back({"all_reduce", 2 * b, 310e-6 + 2 * b / 0.8e9});
  }
  const auto fits = fit_collectives(rows);
  REQUIRE(fits.size() == 2);
  CHECK(fits.at("all_gather").alpha_us == Approx(150).epsilon(1e-9));
  CHECK(fits.at("all_gather").busbw_GBps == Approx(0.8).epsilon(1e-9));
  CHECK(fits.at("all_reduce").alpha_us == Approx(310).epsilon(1e-9));
  CHECK(fits.at("all_reduce").busbw_GBps == Approx(0.8).epsilon(1e-9));
  CHECK(fits.at("all_gather").rows == 4);
}

TEST_CASE("fit_collectives: a negative intercept is clamped at 0, degenerate rows are refused naming the kind") {
  const auto fits = fit_collectives({{"broadcast", 1000, 0.5e-6}, {"broadcast", 3000, 2.5e-6}});
  CHECK(fits.at("broadcast").alpha_us == 0);
  CHECK(fits.at("broadcast").busbw_GBps == Approx(1.0).epsilon(1e-9));
  CHECK_THROWS_WITH(fit_collectives({{"broadcast", 1000, 1e-6}, {"broadcast", 1000, 2e-6}}),
                    Catch::Contains("collective probe: broadcast: 1 distinct size(s)"));
  CHECK_THROWS_WITH(fit_collectives({{"all_gather", 1000, 2e-6}, {"all_gather", 3000, 1e-6}}),
                    Catch::Contains("collective probe: all_gather: the time does not grow with the bytes"));
}

TEST_CASE("machine_json: measured collectives replace the assumed section, with measured provenance") {
  HostMeasurements m;
  m.cores = 2;
  m.compute_threads = 1;
  m.gemm = {{0.01, 0.05}, {0.1, 0.06}};
  m.memory = {{1e6, 5}, {1e7, 6}};
  m.copy_size = {{1e6, 1}};
  m.h2d_GBps = m.d2h_GBps = 1;
  m.adam_params_per_s_1t = m.adam_params_per_s_all = 1e8;
  m.dram_GBps = 6;
  const nlohmann::json assumed = machine_json(m);
  CHECK(assumed["provenance"]["/collectives"]["kind"] == "assumed");
  m.collectives = {{"all_gather", {150, 0.8, 4}}};
  m.collective_rows = {{"all_gather", 8192, 1.6e-4}};
  m.collective_ranks = 2;
  m.collective_net_GBps = 1;
  const nlohmann::json j = machine_json(m);
  CHECK(j["collectives"]["intra_node"]["host_staged"] == false);
  CHECK(j["collectives"]["intra_node"]["all_gather"]["alpha_us"] == 150.0);
  CHECK(j["collectives"]["intra_node"]["all_gather"]["busbw_GBps"] == 0.8);
  CHECK(j["collectives"]["intra_node"]["broadcast"]["alpha_us"] == 10.0);  // not probed: the file's
  CHECK(j["provenance"]["/collectives"]["kind"] == "measured");
}
