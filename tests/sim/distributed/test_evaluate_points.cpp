// evaluate_points in one process (the MPI split is tested end to end in tests/cli/test_mpi.cpp):
// every point once, outcomes in point order whatever the threads, each failure kept with its point
// and rethrown as it was thrown; the search results' codec round-trips what the CLIs print.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>

#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "sim/distributed/evaluate_points.h"
#include "sim/offload/search/search.h"
#include "sim/workload/model_spec.h"
#include "traces/error.h"

using namespace protwin;
using namespace protwin::sim;
using namespace protwin::sim::offload;

TEST_CASE("run_on_threads: each listed index once on 1 to 8 threads, what it throws kept at its index") {
  for (int threads : {1, 3, 8}) {
    const std::vector<size_t> indices = {0, 2, 3, 5};
    std::vector<std::atomic<int>> runs(6);
    std::vector<std::optional<PointError>> errors(6);
    long last_done = 0, last_total = 0;
    run_on_threads(indices, threads, [&](size_t i) {
      ++runs[i];
      if (i == 3) throw Error("point 3 fails");
    }, errors, [&](long done, long total) { last_done = done, last_total = total; });
    for (size_t i = 0; i < runs.size(); ++i) CHECK(runs[i] == (i == 1 || i == 4 ? 0 : 1));
    for (size_t i = 0; i < errors.size(); ++i) CHECK(errors[i].has_value() == (i == 3));
    CHECK(errors[3]->message == "point 3 fails");
    CHECK((last_done == 4 && last_total == 4));
  }
}

TEST_CASE("evaluate_points: each point once, in order, on 1 to 4 threads, failures stay with their point") {
  for (int threads = 1; threads <= 4; ++threads) {
    std::atomic<int> calls{0};
    const auto out = evaluate_points<int>(
        50, threads,
        [&](size_t i) {
          ++calls;
          if (i == 7) throw Error("point 7 refused");
          if (i == 8) throw Error("point 8 broke", ErrorKind::kInternal);
          if (i == 9) throw std::runtime_error("point 9 ran out");
          return static_cast<int>(i * i);
        });
    REQUIRE(calls == 50);
    REQUIRE(out.size() == 50);
    for (size_t i = 0; i < out.size(); ++i) {
      if (i >= 7 && i <= 9) continue;
      REQUIRE(!out[i].error);
      REQUIRE(out[i].get() == static_cast<int>(i * i));
    }
    REQUIRE(out[7].error->kind == PointError::Kind::kUser);
    REQUIRE_THROWS_WITH(out[7].get(), "point 7 refused");
    try {
      out[8].get();
      FAIL("no throw");
    } catch (const Error& e) {
      REQUIRE(e.kind() == ErrorKind::kInternal);
      REQUIRE(std::string(e.what()) == "point 8 broke");
    }
    REQUIRE(out[9].error->kind == PointError::Kind::kOther);
    REQUIRE_THROWS_AS(out[9].get(), std::runtime_error);
  }
  REQUIRE(evaluate_points<int>(0, 2, [](size_t) { return 1; }).empty());
  REQUIRE_THROWS_WITH(evaluate_points<int>(1, 0, [](size_t) { return 1; }),
                      "--threads 0: must be at least 1");
}

TEST_CASE("a search's summary crosses ranks intact: what compare and sweep print comes back bit for bit") {
  const hw::HardwareCostModel cost(hw::load_machine("rtx3090-server", {}));
  SearchOptions o;
  o.batch = 4;
  for (const char* system : {"protrain", "deepspeed", "ddp"}) {
    o.system = system;
    const SearchResult r = search_policy(find_model("gpt2-small"), cost, o);
    const nlohmann::json j = r;
    // Through CBOR, as evaluate_points sends it.
    const SearchResult back = nlohmann::json::from_cbor(nlohmann::json::to_cbor(j)).get<SearchResult>();
    REQUIRE(nlohmann::json(back) == j);
    REQUIRE(back.best.tokens_per_s == r.best.tokens_per_s);
    REQUIRE(back.best.knobs.to_json() == r.best.knobs.to_json());
    REQUIRE(back.found == r.found);
  }
}
