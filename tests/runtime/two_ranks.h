// The rank group of a `mpirun -np 2` test helper (tests/runtime/*_ranks.cpp).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "runtime/comm/rank_group.h"

namespace protwin::rt::testing {

// The world's ranks; exits 1 with a hint when the helper does not run on exactly 2 of them.
inline RankGroup& two_ranks() {
  RankGroup& ranks = RankGroup::world();
  if (ranks.size() != 2) {
    std::fprintf(stderr, "run under mpirun -np 2\n");
    std::exit(1);
  }
  return ranks;
}

}  // namespace protwin::rt::testing
