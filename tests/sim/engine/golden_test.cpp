// Golden reports (tests/golden/*.report.json): the simulator's output for fixed inputs, compared
// byte for byte. After an intended change, rewrite them with PROTWIN_UPDATE_GOLDEN=1 and review
// the diff before committing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "hwmodels/rate_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/engine/synthetic_plan.h"
#include "traces/file_io.h"
#include "traces/plan.h"
#include "traces/report.h"

using namespace protwin;

namespace {
const std::string kSource = PROTWIN_SOURCE_DIR;

// First differing line, for a readable failure.
std::string diff_hint(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
    if (ea && eb) return "identical";
    if (ea || eb || la != lb) {
      std::ostringstream os;
      os << "first difference at line " << line << ":\n  golden: " << (ea ? "<end>" : la)
         << "\n  now:    " << (eb ? "<end>" : lb);
      return os.str();
    }
  }
}

void check_golden(const std::string& name, const traces::Report& report) {
  const std::string path = kSource + "/tests/golden/" + name;
  const std::string got = traces::report_to_string(report);
  const char* update = std::getenv("PROTWIN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    traces::write_file_atomic(path, got);
    WARN("rewrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) FAIL(path << " is missing; create it with PROTWIN_UPDATE_GOLDEN=1");
  std::stringstream want;
  want << in.rdbuf();
  const bool same = want.str() == got;
  INFO(path << " differs from the simulator's output; " << diff_hint(want.str(), got)
            << "\nhint: if the change is intended, rerun with PROTWIN_UPDATE_GOLDEN=1 and review "
               "the diff");
  CHECK(same);
}
}  // namespace

TEST_CASE("golden: the example prefetch pipeline", "[engine][golden]") {
  const traces::Plan plan = traces::read_plan(kSource + "/examples/prefetch_pipeline.plan.json");
  traces::validate(plan);
  const auto rates = hw::RateCostModel::load(kSource + "/examples/rates.json");
  check_golden("prefetch_pipeline.report.json", sim::PlanSimulator(rates).run(plan));
}

TEST_CASE("golden: a 300-op synthetic plan", "[engine][golden]") {
  const traces::Plan plan = sim::make_synthetic_plan(300, 5, 7);
  const auto rates = hw::RateCostModel::from_json(sim::synthetic_rates(), "synthetic");
  check_golden("synthetic_300_5_7.report.json", sim::PlanSimulator(rates).run(plan));
}
