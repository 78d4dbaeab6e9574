// protwin under mpirun: sweep, search-4d, compare and capacity split their points over the MPI
// ranks and rank 0 prints what one process prints. The oracle is the same command run as one
// process: the outputs must be byte-identical apart from the wall-time fields, for an even split,
// an uneven one and more ranks than points; a failing point is reported as one process reports it.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "tests/cli/gemm_profile.h"
#include "tests/cli/run_protwin.h"

namespace {

// As root (CI) Open MPI wants --allow-run-as-root; --oversubscribe lets 3 or 4 ranks share 2 cores.
// No single-copy (CMA) transfers: containers often forbid the ptrace they need.
std::string mpirun(int ranks) {
  return "OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root --oversubscribe -np " +
         std::to_string(ranks);
}

// Wall times differ from run to run: "in 1.23 s" in tables, "sweep_s"/"search_s"/"seconds" in JSON
// (and a CSV's last column, search_s).
std::string without_wall_times(const std::string& s) {
  static const std::regex table(R"re(in [0-9.]+ s\b)re");
  static const std::regex json(R"re(("(sweep_s|search_s|seconds)": )[-0-9.e+]+)re");
  return std::regex_replace(std::regex_replace(s, table, "in <wall> s"), json, "$1<wall>");
}

void same_as_one_process(const std::string& args, int ranks) {
  const CliResult one = run_protwin(args);
  REQUIRE(one.code == 0);
  const CliResult many = run_protwin(args, mpirun(ranks));
  INFO("protwin " << args << " on " << ranks << " ranks; stderr:\n" << many.err);
  REQUIRE(many.code == 0);
  REQUIRE(!one.out.empty());
  CHECK(without_wall_times(many.out) == without_wall_times(one.out));
}

const std::string kSweep = "sweep --model gpt2-small --machine rtx3090-server --gpus 1 --batch 4 "
                           "--set host.cores=12,24,48 --system protrain,deepspeed";  // 6 points
const std::string kSmall4d = "search-4d --model 'llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000' "
                             "--machine dgx-a100 --nodes 2 --seq 1024 --gbs 64 --mbs-max 2";

}  // namespace

TEST_CASE("mpi: sweep on 2 ranks (even split) and 4 ranks (6 points: uneven) prints what one process prints",
          "[cli][mpi]") {
  same_as_one_process(kSweep, 2);
  same_as_one_process(kSweep + " --json", 4);
}

TEST_CASE("mpi: search-4d on 2 and 3 ranks prints what one process prints", "[cli][mpi]") {
  same_as_one_process(kSmall4d + " --top 100", 2);
  same_as_one_process(kSmall4d + " --json", 3);
}

TEST_CASE("mpi: search-4d --uneven-stages on 2 ranks prints what one process prints (the split crosses ranks)",
          "[cli][mpi][stages]") {
  const std::string six = "search-4d --model 'llama:hidden=512,layers=6,heads=8,kv_heads=4,vocab=1000' "
                          "--machine dgx-a100 --nodes 1 --seq 1024 --gbs 16 --mbs-max 1 --uneven-stages";
  same_as_one_process(six + " --top 100", 2);
  same_as_one_process(six + " --json", 2);
}

TEST_CASE("mpi: compare (6 systems) on 4 ranks prints what one process prints, the trace written once",
          "[cli][mpi]") {
  const std::string trace = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/mpi_compare.trace.json";
  std::remove(trace.c_str());
  same_as_one_process("compare --model gpt2-small --machine rtx3090-server --gpus 1 --batch 4", 4);
  const CliResult r = run_protwin("compare --model gpt2-small --machine rtx3090-server --gpus 1 --batch 4 "
                                  "--chrome-trace " + trace, mpirun(2));
  REQUIRE(r.code == 0);
  CHECK(slurp(trace).find("\"traceEvents\"") != std::string::npos);
  std::remove(trace.c_str());
}

TEST_CASE("mpi: capacity with 2 systems on 3 ranks (more ranks than points) prints what one process prints",
          "[cli][mpi]") {
  same_as_one_process("capacity --machine rtx3090-server --gpus 1 --systems protrain,ddp --max-layers 64", 3);
}

TEST_CASE("mpi: a point that fails on rank 1 fails the sweep as in one process (message, exit 2)", "[cli][mpi]") {
  // Point 1 (gpu.count 2, on rank 1) cannot give 4 GPUs; point 0 can.
  const std::string args = "sweep --model gpt2-small --machine rtx3090-server --gpus 4 --batch 4 "
                           "--set gpu.count=4,2";
  const CliResult one = run_protwin(args);
  const CliResult many = run_protwin(args, mpirun(2));
  REQUIRE(one.code == 2);
  CHECK(many.code == 2);
  CHECK(one.out.empty());
  CHECK(many.out.empty());
  const std::string message = "protwin sweep: error: --gpus: 4 GPUs requested but rtx3090-server has 2\n";
  CHECK(one.err == message);
  CHECK(many.err.find(message) != std::string::npos);
}

TEST_CASE("mpi: layouts refused on other ranks are listed as refused, as in one process", "[cli][mpi]") {
  // Nodes of 6 GPUs: a DP group of 3 would straddle two nodes unevenly, which the placement refuses
  // for 3 of the 10 layouts; the 7 others are ranked.
  const std::string args = "search-4d --model 'llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000' "
                           "--machine dgx-a100 --set gpu.count=6 --nodes 2 --seq 1024 --gbs 48 --mbs-max 1";
  const CliResult one = run_protwin(args);
  REQUIRE(one.code == 0);
  REQUIRE(one.out.find("refused: TP 4 CP 1 PP 1 DP 3 MBS 1: ") != std::string::npos);
  same_as_one_process(args, 3);
  same_as_one_process(args + " --json", 2);
}

TEST_CASE("mpi: --profile reaches every rank: sweep and search-4d with a profile print what one process prints",
          "[cli][mpi][profile]") {
  // A profile pricing the first GEMM of each command's plans at 1 ms: the answer moves, on every rank.
  const std::string dir = std::string(PROTWIN_BINARY_DIR) + "/tests/cli/mpi_profile_" + std::to_string(::getpid());
  REQUIRE(run_protwin("simulate --model gpt2-small --machine rtx3090-server --gpus 1 --batch 4 --plan-out " + dir +
                      ".offload.json").code == 0);
  REQUIRE(run_protwin("simulate-4d --model 'llama:hidden=512,layers=8,heads=8,kv_heads=4,vocab=1000' --machine "
                      "dgx-a100 --tp 1 --pp 1 --dp 1 --mbs 1 --gbs 4 --seq 1024 --plan-out " + dir + ".4d.json").code == 0);
  const std::string sweep = kSweep + " --json --profile " +
      gemm_profile(dir + ".p1.json", first_gemm(protwin::traces::read_plan(dir + ".offload.json")), 1e-3);
  const std::string s4d = kSmall4d + " --json --profile " +
      gemm_profile(dir + ".p2.json", first_gemm(protwin::traces::read_plan(dir + ".4d.json")), 1e-3);
  CHECK(without_wall_times(run_protwin(sweep).out) != without_wall_times(run_protwin(kSweep + " --json").out));
  CHECK(without_wall_times(run_protwin(s4d).out) != without_wall_times(run_protwin(kSmall4d + " --json").out));
  same_as_one_process(sweep, 3);
  same_as_one_process(s4d, 2);
  for (const char* f : {".offload.json", ".4d.json", ".p1.json", ".p2.json"}) std::remove((dir + f).c_str());
}
