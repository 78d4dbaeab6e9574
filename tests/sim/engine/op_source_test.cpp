// PlanSimulator::run over an OpSource (a streamed run). Oracles: the same plan's run from the
// Plan (its Report, op by op, on the 300-op synthetic golden plan with pools and links); the
// OpSource contract broken on purpose gives an internal error, never a silent wrong answer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "hwmodels/rate_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/engine/synthetic_plan.h"
#include "traces/error.h"
#include "traces/report.h"

using namespace protwin;

namespace {

// Hands a plan's ops one at a time; wants `eager` ops taken before the run and after each start
// (all of them: a source that follows the contract without knowing its plan).
class Handout final : public sim::OpSource {
 public:
  Handout(const traces::Plan& plan, size_t eager) : plan_(plan), eager_(eager) {}
  const traces::Plan& header() const override { return plan_; }
  const traces::Op* next() override { return next_ < plan_.ops.size() ? &plan_.ops[next_++] : nullptr; }
  bool wants_more() const override { return next_ < std::min(eager_, plan_.ops.size()); }
  bool generated(int id) const override { return static_cast<size_t>(id) < next_; }
  void release(int id, int stream) override {
    (void)stream;
    released_.push_back(id);
  }
  std::vector<int> released_;

 private:
  const traces::Plan& plan_;
  size_t eager_;
  size_t next_ = 0;
};

}  // namespace

TEST_CASE("a streamed run gives the plan's report op by op, records in id order", "[engine][stream]") {
  const traces::Plan plan = sim::make_synthetic_plan(300, 5, 7);
  const auto rates = hw::RateCostModel::from_json(sim::synthetic_rates(), "synthetic");
  const sim::PlanSimulator simulator(rates);
  sim::RunStats whole_stats, stats;
  const traces::Report whole = simulator.run(plan, &whole_stats);
  Handout source(plan, plan.ops.size());
  std::vector<traces::OpRecord> records;
  const traces::Report streamed =
      simulator.run(source, &stats, [&](const traces::OpRecord& r) { records.push_back(r); });
  CHECK(streamed.ops.empty());
  REQUIRE(records.size() == whole.ops.size());
  for (size_t i = 0; i < records.size(); ++i) {
    INFO("op " << i);
    CHECK(records[i].id == whole.ops[i].id);
    CHECK(records[i].kind == whole.ops[i].kind);
    CHECK(records[i].stream == whole.ops[i].stream);
    CHECK(records[i].start.ns == whole.ops[i].start.ns);
    CHECK(records[i].end.ns == whole.ops[i].end.ns);
  }
  // Every op released once, when it ended (so not necessarily in id order).
  std::vector<int> released = source.released_;
  std::sort(released.begin(), released.end());
  for (size_t i = 0; i < released.size(); ++i) CHECK(released[i] == static_cast<int>(i));
  traces::Report with_ops = streamed;
  with_ops.ops = records;
  CHECK(traces::report_to_string(with_ops) == traces::report_to_string(whole));
  CHECK(stats.ops == 300);
  CHECK(whole_stats.peak_live_ops == 300);
  CHECK(stats.events == whole_stats.events);
}

TEST_CASE("a source that breaks the OpSource contract is an internal error", "[engine][stream]") {
  const traces::Plan plan = sim::make_synthetic_plan(50, 2, 3);
  const auto rates = hw::RateCostModel::from_json(sim::synthetic_rates(), "synthetic");
  Handout lazy(plan, 1);  // only op 0 before the run, never more: ops are left
  CHECK_THROWS_WITH(sim::PlanSimulator(rates).run(lazy), Catch::Contains("OpSource contract"));

  traces::Plan forward = sim::make_synthetic_plan(3, 1, 3);
  forward.ops[0].deps = {2};  // op 2 comes after op 0 on their stream: a cycle
  Handout ahead(forward, 3);
  CHECK_THROWS_WITH(sim::PlanSimulator(rates).run(ahead), Catch::Contains("form a cycle"));

  // A stream's ops handed out of id order.
  traces::Plan swapped = sim::make_synthetic_plan(3, 1, 3);
  std::swap(swapped.ops[1], swapped.ops[2]);
  Handout disorder(swapped, 3);
  CHECK_THROWS_WITH(sim::PlanSimulator(rates).run(disorder), Catch::Contains("a stream's ops in id order"));
}

namespace {

// Hands a plan's ops out one stream after the other (each stream's ops in id order), all before
// the run: an op's dependencies on other streams are often not generated yet.
class ByStream final : public sim::OpSource {
 public:
  explicit ByStream(const traces::Plan& plan) : plan_(plan), handed_(plan.ops.size(), false) {
    for (const auto& s : plan.streams)
      for (const auto& op : plan.ops)
        if (op.stream == s.name) order_.push_back(static_cast<size_t>(op.id));
  }
  const traces::Plan& header() const override { return plan_; }
  const traces::Op* next() override {
    if (next_ == order_.size()) return nullptr;
    handed_[order_[next_]] = true;
    return &plan_.ops[order_[next_++]];
  }
  bool wants_more() const override { return next_ < order_.size(); }
  bool generated(int id) const override { return handed_[static_cast<size_t>(id)]; }

 private:
  const traces::Plan& plan_;
  std::vector<size_t> order_;
  std::vector<bool> handed_;
  size_t next_ = 0;
};

}  // namespace

TEST_CASE("a streamed run waits by id for dependencies generated after their ops", "[engine][stream]") {
  const traces::Plan plan = sim::make_synthetic_plan(300, 5, 7);
  const auto rates = hw::RateCostModel::from_json(sim::synthetic_rates(), "synthetic");
  const sim::PlanSimulator simulator(rates);
  const traces::Report whole = simulator.run(plan);
  ByStream source(plan);
  sim::RunStats stats;
  traces::Report streamed = simulator.run(source, &stats);  // records in id order, in the Report
  CHECK(traces::report_to_string(streamed) == traces::report_to_string(whole));
  // Records out as ops end: the same records, in another order.
  std::vector<traces::OpRecord> records;
  ByStream again(plan);
  simulator.run(again, nullptr, [&](const traces::OpRecord& r) { records.push_back(r); }, true);
  REQUIRE(records.size() == whole.ops.size());
  bool in_id_order = true;
  for (size_t i = 0; i < records.size(); ++i) {
    in_id_order = in_id_order && records[i].id == static_cast<int>(i);
    const traces::OpRecord& w = whole.ops[static_cast<size_t>(records[i].id)];
    CHECK(records[i].start.ns == w.start.ns);
    CHECK(records[i].end.ns == w.end.ns);
  }
  CHECK(!in_id_order);
}
