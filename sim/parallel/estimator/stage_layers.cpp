#include "sim/parallel/estimator/stage_layers.h"

#include "traces/error.h"

namespace protwin::sim::parallel {

using protwin::detail::concat;

std::string stage_split_problem(int64_t layers, int64_t pp, const StageSplit& s) {
  if (pp < 1) return concat("--pp ", pp, ": must be at least 1");
  if (s.first < 0) return concat("--first-stage-layers ", s.first, ": must be at least 1 (0: even split)");
  if (s.last < 0) return concat("--last-stage-layers ", s.last, ": must be at least 1 (0: even split)");
  if (!s.uneven()) {
    if (layers % pp != 0) return concat("--pp ", pp, ": layers ", layers, " is not divisible by PP ", pp);
    return "";
  }
  const char* flag = s.first > 0 ? "--first-stage-layers" : "--last-stage-layers";
  if (pp < 2) return concat(flag, ": uneven stages need --pp of at least 2, got ", pp);
  if (s.first > 0 && s.last > 0 && pp == 2) {
    if (s.first + s.last != layers)
      return concat("--first-stage-layers ", s.first, " --last-stage-layers ", s.last, ": with PP 2 they must add up to ",
                    "the ", layers, " layers");
    return "";
  }
  const int64_t given = s.first + s.last;
  const int64_t others = pp - (s.first > 0 ? 1 : 0) - (s.last > 0 ? 1 : 0);
  if (given > layers - others)
    return concat(flag, ": ", given, " layers on the first/last stage leave fewer than one layer for each of the other ",
                  others, " stages (", layers, " layers)");
  if ((layers - given) % others != 0)
    return concat(flag, ": the other ", others, " stages cannot split the remaining ", layers - given,
                  " layers evenly (PP ", pp, ", ", layers, " layers)");
  return "";
}

std::vector<int64_t> stage_layers(int64_t layers, int64_t pp, const StageSplit& s) {
  const std::string problem = stage_split_problem(layers, pp, s);
  PROTWIN_CHECK(problem.empty(), problem);
  if (!s.uneven()) return std::vector<int64_t>(static_cast<size_t>(pp), layers / pp);
  const int64_t others = pp - (s.first > 0 ? 1 : 0) - (s.last > 0 ? 1 : 0);
  const int64_t middle = others > 0 ? (layers - s.first - s.last) / others : 0;
  std::vector<int64_t> out(static_cast<size_t>(pp), middle);
  if (s.first > 0) out.front() = s.first;
  if (s.last > 0) out.back() = s.last;
  return out;
}

StageSplit one_short_ends(int64_t layers, int64_t pp) {
  if (pp <= 2 || layers % pp == 0 || (layers + 2) % pp != 0) return {};
  const int64_t short_stage = (layers + 2) / pp - 1;
  if (short_stage < 1) return {};
  return {short_stage, short_stage};
}

}  // namespace protwin::sim::parallel
