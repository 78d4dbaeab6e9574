// `mpirun -np 2 protwin train` replays 2-GPU plans (ZeRO-3 sharded chunks, all-gathers, reduce-
// scatters, all-reduces over MPI). Oracle: the 1-rank all-resident plan of the same global batch
// (2 x 2 sequences) trains to the same losses within 1e-6 relative; a rerun gives bitwise the same
// losses (fixed reduction order); a checkpoint of 2 ranks resumes on 1 rank and the reverse, to the
// uninterrupted run's losses. Without mpirun a 2-GPU plan is refused with the mpirun command.
// --net-GBps: every collective takes at least its bus bytes over the rate.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/run_protwin.h"
#include "tests/runtime/rank_runs.h"
#include "traces/report.h"

namespace {

namespace fs = std::filesystem;
using namespace protwin::rt::testing;

}  // namespace

TEST_CASE("ranks: 2-rank plans train to the 1-rank all-resident losses of the same global batch", "[runtime][mpi]") {
  if (!have_runtime()) {
    WARN("SKIPPED: protwin-rt is not built");
    return;
  }
  for (const std::string model : {"gpt2-tiny", "llama-tiny"}) {
    const std::string one = write(resident_plan(tiny_workload(model, kPlanBatch * kRanks)), model + ".1rank.json");
    const std::vector<double> want = losses(one, 1);
    const protwin::sim::Workload w = tiny_workload(model);
    const std::string ddp = write(resident_plan(w, kRanks), model + ".resident.json");
    close_to(losses(ddp, kRanks), want, model + " all-resident on 2 ranks (all-reduce)");
    const std::vector<protwin::sim::offload::OffloadKnobs> ks = policies(w);
    for (size_t i = 0; i < ks.size(); ++i) {
      const std::string p = write(compile_plan(w, ks[i], kGpuBytes, kRanks), model + ".policy" + std::to_string(i) + ".json");
      close_to(losses(p, kRanks, "--link-GBps 20 --net-GBps 5"), want, model + " policy " + std::to_string(i) + ": " + p);
    }
  }
}

TEST_CASE("ranks: a 2-rank rerun gives bitwise the same losses", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const protwin::sim::Workload w = tiny_workload("gpt2-tiny");
  const std::string p = write(compile_plan(w, policies(w)[0], kGpuBytes, kRanks), "rerun.json");
  const std::vector<double> a = losses(p, kRanks), b = losses(p, kRanks);
  CHECK(a == b);
}

TEST_CASE("ranks: checkpoints resume across rank counts (2 -> 1 and 1 -> 2)", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const protwin::sim::Workload w = tiny_workload("llama-tiny");
  const std::string two = write(compile_plan(w, policies(w)[0], kGpuBytes, kRanks), "ck.2rank.json");
  const std::string one = write(resident_plan(tiny_workload("llama-tiny", kPlanBatch * kRanks)), "ck.1rank.json");
  const std::vector<double> want = losses(one, 1);
  for (const bool two_first : {true, false}) {
    const std::string dir = scratch(two_first ? "ck_2to1" : "ck_1to2");
    fs::remove_all(dir);
    const std::string first = "train --plan " + (two_first ? two : one) + " --steps 4 --checkpoint " + dir;
    const CliResult a = two_first ? run_protwin(first, mpirun(kRanks)) : run_protwin(first);
    INFO(a.err);
    REQUIRE(a.code == 0);
    const std::string second = "train --plan " + (two_first ? one : two) + " --steps " + std::to_string(kSteps) +
                               " --resume " + dir + " --json";
    const CliResult b = two_first ? run_protwin(second) : run_protwin(second, mpirun(kRanks));
    INFO(b.err);
    REQUIRE(b.code == 0);
    const std::vector<double> tail = nlohmann::json::parse(b.out).at("losses").get<std::vector<double>>();
    close_to(tail, std::vector<double>(want.begin() + 4, want.end()), two_first ? "2 ranks -> 1" : "1 rank -> 2");
  }
}

TEST_CASE("ranks: without mpirun a 2-GPU plan is refused with the mpirun command", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const std::string p = write(resident_plan(tiny_workload("gpt2-tiny"), kRanks), "refused.json");
  const CliResult r = run_protwin("train --plan " + p + " --steps 1");
  CHECK(r.code == 2);
  CHECK(r.err.find(p + ":/meta/gpus: the runtime replays one GPU per process, and this plan has 2 GPUs but 1 "
                   "process is running") != std::string::npos);
  CHECK(r.err.find("hint: start one process per GPU: mpirun -np 2 protwin train --plan " + p) != std::string::npos);
}

TEST_CASE("ranks: --net-GBps caps each collective at its bus bytes over the rate", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const protwin::sim::Workload w = tiny_workload("gpt2-tiny");
  const std::string p = write(compile_plan(w, policies(w)[0], kGpuBytes, kRanks), "net.json");
  const std::string measured = scratch("net.measured.json");
  const double gbps = 0.2;
  const CliResult r = run_protwin("train --plan " + p + " --steps 1 --net-GBps 0.2 -o " + measured, mpirun(kRanks));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const protwin::traces::Plan plan = protwin::traces::read_plan(p);
  const protwin::traces::Report rep = protwin::traces::read_report(measured);
  int collectives = 0;
  for (const protwin::traces::Op& op : plan.ops) {
    if (op.kind != protwin::traces::OpKind::kAllGather && op.kind != protwin::traces::OpKind::kReduceScatter && op.kind != protwin::traces::OpKind::kAllReduce) continue;
    ++collectives;
    // The plan's bytes are the chunk's; a rank sends and receives (N-1)/N of them per pass (an
    // all-reduce, and a reduce-scatter of a replicated chunk, makes two passes). 1 GB/s = 1 B/ns.
    const protwin::traces::OpRecord& rec = rep.ops[static_cast<size_t>(op.id)];
    const double bus = static_cast<double>(op.work.bytes) * (kRanks - 1) / kRanks;
    INFO(op.kind << " of chunk " << op.chunk << ": " << rec.end.ns - rec.start.ns << " ns");
    CHECK(static_cast<double>(rec.end.ns - rec.start.ns) >= 0.99 * bus / gbps);
  }
  CHECK(collectives > 0);
}

TEST_CASE("ranks: a sharded device Adam whose shard is never gathered is refused before step 1", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const protwin::sim::Workload w = tiny_workload("gpt2-tiny");
  protwin::traces::Plan plan = compile_plan(w, policies(w)[0], kGpuBytes, kRanks);  // chunk 0 persistent, sharded
  int adam = -1;
  for (protwin::traces::Op& op : plan.ops) {
    if (op.kind == protwin::traces::OpKind::kAdamDevice && op.chunk == 0) adam = op.id;
    if (op.kind == protwin::traces::OpKind::kAllGather && op.chunk == 0 && adam >= 0) op.deps.clear();  // the gather no longer follows Adam
  }
  REQUIRE(adam >= 0);
  const std::string p = write(plan, "stale.json");
  const CliResult r = run_protwin("train --plan " + p + " --steps 1", mpirun(kRanks));
  CHECK(r.code != 0);
  CHECK(r.err.find(p + ":/ops/" + std::to_string(adam) + ": adam_device updates this rank's shard of chunk 0") !=
        std::string::npos);
}

TEST_CASE("ranks: --rank-reports writes every rank's step on the shared clock, --probes every rank's probes, --block-probes its blocks",
          "[runtime][mpi]") {
  if (!have_runtime()) return;
  const protwin::sim::Workload w = tiny_workload("gpt2-tiny");
  const std::string p = write(compile_plan(w, policies(w)[0], kGpuBytes, kRanks), "rank_reports.json");
  const std::string dir = scratch("rank_reports");
  fs::remove_all(dir);
  const CliResult r =
      run_protwin("train --plan " + p + " --steps 2 --json --probes --block-probes --rank-reports " + dir, mpirun(kRanks));
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::vector<int64_t> starts;
  for (int k = 0; k < kRanks; ++k) {
    const protwin::traces::Report rep = protwin::traces::read_report(dir + "/rank" + std::to_string(k) + ".json");
    CHECK(rep.ops.size() == protwin::traces::read_plan(p).ops.size());
    REQUIRE(rep.meta.contains("steady_start_ns"));
    starts.push_back(rep.meta["steady_start_ns"].get<int64_t>());
  }
  // One clock for both ranks (steady_clock: time since boot), and the ranks start the step together
  // after the previous step's loss all-gather and their probes: well within 10 s on a loaded machine.
  CHECK(starts[0] > 0);
  CHECK(std::abs(starts[1] - starts[0]) < 10'000'000'000);
  const nlohmann::json probes = nlohmann::json::parse(r.out).at("rank_probes");
  REQUIRE(probes.size() == static_cast<size_t>(kRanks));
  for (const auto& steps : probes) {
    REQUIRE(steps.size() == 2);
    for (const auto& s : steps)
      for (const char* k : {"gemm_before_gflops", "gemm_after_gflops", "copy_before_GBps", "copy_after_GBps",
                            "adam_before_mparams_per_s", "adam_after_mparams_per_s"})
        CHECK(s.at(k).get<double>() > 0);
  }
  // --block-probes: every rank's run of each of the plan's blocks after each step.
  const nlohmann::json blocks = nlohmann::json::parse(r.out).at("rank_block_probes");
  REQUIRE(blocks.size() == static_cast<size_t>(kRanks));
  for (const auto& rank : blocks) {
    CHECK(rank.size() == 6);  // embedding, layer, head; forward and backward
    for (const auto& b : rank) {
      CHECK_FALSE(b.at("signature").get<std::string>().empty());
      REQUIRE(b.at("us").size() == 2);
      for (const auto& us : b["us"]) CHECK(us.get<double>() > 0);
    }
  }
}

// Issue 23, session 12: all plans in one `mpirun -np 2 protwin interleave` launch, step by step
// (plans forwards on even steps, backwards on odd ones). Oracle: each plan trains to the losses
// of its own `mpirun -np 2 protwin train` (within 1e-6): the alternation, each plan's data
// position and each rank's rows of the global batch are kept per plan. The group's step is its
// slowest rank's; every rank reports its probes around every step.
TEST_CASE("ranks: interleave on 2 ranks trains every plan to its own train losses, with both ranks' probes",
          "[runtime][mpi]") {
  if (!have_runtime()) return;
  const protwin::sim::Workload w = tiny_workload("gpt2-tiny");
  const std::vector<protwin::sim::offload::OffloadKnobs> ks = policies(w);
  const std::vector<std::string> plans = {write(compile_plan(w, ks[0], kGpuBytes, kRanks), "interleave0.json"),
                                          write(compile_plan(w, ks[1], kGpuBytes, kRanks), "interleave1.json"),
                                          write(resident_plan(w, kRanks), "interleave2.json")};
  std::string args = "interleave --steps " + std::to_string(kSteps) + " --net-GBps 5 --json";
  for (const std::string& p : plans) args += " --plan " + p;
  const CliResult r = run_protwin(args, mpirun(kRanks));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("ranks") == kRanks);
  REQUIRE(j.at("plans").size() == plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    const nlohmann::json& p = j["plans"][i];
    close_to(p.at("losses").get<std::vector<double>>(), losses(plans[i], kRanks, "--net-GBps 5"),
             "interleaved plan " + std::to_string(i) + " against its own train");
    const auto group = p.at("iteration_s").get<std::vector<double>>();
    const auto per_rank = p.at("ranks").at("iteration_s").get<std::vector<std::vector<double>>>();
    REQUIRE(per_rank.size() == static_cast<size_t>(kRanks));
    REQUIRE(group.size() == static_cast<size_t>(kSteps));
    for (size_t s = 0; s < group.size(); ++s) CHECK(group[s] == std::max(per_rank[0][s], per_rank[1][s]));
    for (const char* probe : {"gemm_before_gflops", "gemm_after_gflops", "copy_before_GBps", "copy_after_GBps",
                              "adam_before_mparams_per_s", "adam_after_mparams_per_s"}) {
      const auto v = p["ranks"].at(probe).get<std::vector<std::vector<double>>>();
      REQUIRE(v.size() == static_cast<size_t>(kRanks));
      for (const auto& rank : v) {
        REQUIRE(rank.size() == static_cast<size_t>(kSteps));
        for (double x : rank) CHECK(x > 0);
      }
    }
  }
}

TEST_CASE("ranks: interleave refuses a 1-GPU plan under mpirun -np 2, naming the plan", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const std::string p = write(resident_plan(tiny_workload("gpt2-tiny")), "interleave_one_gpu.json");
  const CliResult r = run_protwin("interleave --steps 2 --plan " + p, mpirun(kRanks));
  CHECK(r.code != 0);
  CHECK(r.err.find(p + ":/meta/gpus") != std::string::npos);
}

// calibrate --ranks profiles its 2-GPU plans' kernels with `mpirun -np 2 protwin profile --plan`;
// each rank profiles alone. The runtime's per-step work was timed on a real step of the first
// --plan, which a single process cannot replay for a 2-GPU plan: every rank stopped with the
// 1-process refusal (main, 2026-11-26). Now a 2-GPU plan's step is not replayed; its kernels are.
TEST_CASE("ranks: protwin profile of a 2-GPU plan's kernels times the per-step work on empty ops", "[runtime][mpi]") {
  if (!have_runtime()) return;
  const std::string p = write(resident_plan(eager_workload("gpt2-tiny", 2, 16), kRanks), "profile_two_gpus.json");
  const std::string dir = scratch("profile_two_gpus");  // this build's own folder: another worktree's suite
                                                         // removed a shared /tmp one mid-run
  fs::create_directories(dir);
  const CliResult r = run_protwin("profile --only-plans --rounds 1 --min-seconds 0.005 --plan " + p + " -o " + dir +
                                  "/machine.json --profile-out " + dir + "/profile.json --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("ops").get<int>() > 0);
  CHECK(j.at("runtime_step_us").get<double>() >= 0);
  fs::remove_all(dir);
}

// The rank profile as calibrate --ranks takes it: both ranks time every op and contention window
// together (a barrier each), which only completes when both walk the same list; each rank's op
// profile then carries compute beside its own collectives, measured with 2 ranks in step, and its
// machine file the fitted collectives.
TEST_CASE("ranks: mpirun -np 2 protwin profile times compute beside the rank's collectives, the ranks in step",
          "[runtime][mpi]") {
  if (!have_runtime()) return;
  const std::string p = write(resident_plan(eager_workload("gpt2-tiny", 2, 16), kRanks), "profile_ranks.json");
  const std::string dir = scratch("profile_ranks");
  fs::create_directories(dir);
  const CliResult r = run_protwin("profile --only-plans --rounds 1 --min-seconds 0.005 --collective-reps 1 --net-GBps 1 --plan " +
                                      p + " -o " + dir + "/m-$OMPI_COMM_WORLD_RANK.json --profile-out " + dir +
                                      "/p-$OMPI_COMM_WORLD_RANK.json'",
                                  mpirun(kRanks) + " /bin/sh -c '");  // each rank its own files
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (int rank = 0; rank < kRanks; ++rank) {
    const nlohmann::json prof = nlohmann::json::parse(slurp(dir + "/p-" + std::to_string(rank) + ".json"));
    const nlohmann::json& c = prof.at("provenance").at("contention");
    CHECK(c.at("ranks") == kRanks);
    CHECK(c.at("compute_slowdown_with_collectives").get<double>() > 0);
    CHECK(c.at("collective_thread_cpu_share").get<double>() > 0);
    const nlohmann::json machine = nlohmann::json::parse(slurp(dir + "/m-" + std::to_string(rank) + ".json"));
    CHECK(machine.at("collectives").at("intra_node").contains("all_gather"));
  }
  fs::remove_all(dir);
}
