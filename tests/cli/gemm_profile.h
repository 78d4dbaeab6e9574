// Op profiles that price one GEMM of a compiled plan (tests of --profile, issue 17).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "traces/op_profile.h"
#include "traces/plan.h"

// The first GEMM of the plan's forward ops.
inline protwin::traces::OpSignature first_gemm(const protwin::traces::Plan& plan) {
  for (const auto& op : plan.ops)
    if (op.kind == protwin::traces::OpKind::kForward)
      for (const auto& k : plan.kernels_of(op))
        if (k.sig.kind == "gemm") return k.sig;
  FAIL("no forward GEMM in the plan");
  return {};
}

// Calls of `sig` in the plan: GEMMs are looked up by their own signature in every pass.
inline int64_t calls_of(const protwin::traces::Plan& plan, const protwin::traces::OpSignature& sig) {
  int64_t n = 0;
  for (const auto& op : plan.ops)
    for (const auto& k : plan.kernels_of(op))
      if (k.sig == sig) n += k.count;
  return n;
}

// Writes a profile pricing only `sig`, at `seconds` per call, to `path` and returns the path.
inline std::string gemm_profile(const std::string& path, const protwin::traces::OpSignature& sig, double seconds) {
  protwin::traces::OpProfile p("test device", "measured", "tests/cli/gemm_profile.h");
  protwin::traces::OpProfileEntry e;
  e.sig = sig;
  e.us.add(seconds * 1e6);
  e.source = "test";
  p.add(e);
  p.save(path);
  return path;
}
