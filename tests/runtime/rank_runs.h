// Helpers of the `mpirun -np 2 protwin train` tests (test_ranks.cpp, test_ranks_memory.cpp): the
// mpirun command, scratch files, and the 2-rank policies both replay.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/run_protwin.h"
#include "tests/runtime/plan_fixtures.h"
#include "traces/report.h"

namespace protwin::rt::testing {

inline constexpr int kRanks = 2;
inline constexpr int kSteps = 8;

// As test_mpi.cpp: root needs --allow-run-as-root, 2 ranks on a loaded 2-core machine
// --oversubscribe, containers forbid the ptrace of single-copy (CMA) transfers.
inline std::string mpirun(int ranks) {
  return "OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root --oversubscribe -np " +
         std::to_string(ranks);
}

inline std::string scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(PROTWIN_BINARY_DIR) / "tests" / "runtime" / "ranks";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::string write(const protwin::traces::Plan& plan, const std::string& name) {
  const std::string path = scratch(name);
  protwin::traces::write_plan(plan, path);
  return path;
}

inline std::vector<double> losses(const std::string& plan, int ranks, const std::string& extra = "") {
  const std::string args = "train --plan " + plan + " --steps " + std::to_string(kSteps) + " --json " + extra;
  const CliResult r = ranks > 1 ? run_protwin(args, mpirun(ranks)) : run_protwin(args);
  INFO("protwin " << args << " on " << ranks << " rank(s); stderr:\n" << r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("ranks") == ranks);
  return j.at("losses").get<std::vector<double>>();
}

inline void close_to(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("step " << i + 1 << ": " << got[i] << " vs " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= 1e-6 * std::abs(want[i]));
  }
}

inline bool have_runtime() {
  return std::filesystem::exists(std::string(PROTWIN_BINARY_DIR) + "/cli/protwin-rt");
}

// The 2-rank policies: ProTrain-like sharded offloading (one persistent chunk: its Adam state
// sharded on the device, reduce_scatter + adam_device of the shard + all_gather), ZeRO-Offload
// (host Adam of persistent chunks, updated shards gathered), per-block chunks (GPT-2's tied
// embedding: gradient pieces), checkpointed and swapped blocks, all chunks but one persistent with
// sharded device Adam; then seeded random ones. (DDP's replicated all-reduce plan: resident_plan.)
inline std::vector<protwin::sim::offload::OffloadKnobs> policies(const protwin::sim::Workload& w) {
  std::vector<protwin::sim::offload::OffloadKnobs> out;
  protwin::sim::offload::OffloadKnobs k;
  k.chunk_bytes = int64_t{4} << 20;
  k.n_persist = 1;
  k.n_buffer = 3;
  out.push_back(k);  // sharded chunks, CPU Adam overlapped
  k.persistent_gpu_adam = false;
  k.n_persist = static_cast<int>(protwin::sim::offload::layout_for(w, k).chunks.size()) - 1;
  k.n_buffer = 1;
  out.push_back(k);  // ZeRO-Offload's persistent chunks (host Adam), one sharded chunk
  protwin::sim::offload::OffloadKnobs b;
  b.per_block_chunks = true;
  b.chunk_bytes = 0;
  b.n_persist = 0;
  b.n_buffer = 2;
  b.n_checkpoint = 1;
  b.n_swap = 1;
  b.cpu_adam_overlap = false;
  b.grad_roundtrip = true;
  b.step_host_passes = true;
  out.push_back(b);  // DeepSpeed-like per-block chunks
  protwin::sim::offload::OffloadKnobs p;  // ProTrain-like: all chunks but the last persistent, device Adam sharded
  p.chunk_bytes = int64_t{1} << 20;
  p.n_persist = static_cast<int>(protwin::sim::offload::layout_for(w, p).chunks.size()) - 1;
  p.n_buffer = 1;
  out.push_back(p);
  std::mt19937 rng(23);
  for (int i = 0; i < 2; ++i) out.push_back(protwin::rt::testing::random_knobs(w, rng, kRanks));
  return out;
}

}  // namespace protwin::rt::testing
