#include "sim/engine/synthetic_plan.h"

#include <random>
#include <string>
#include <vector>

#include "traces/error.h"

namespace protwin::sim {

namespace {
constexpr int kRecent = 8;                 // deps reach back at most this many ops
constexpr int64_t kMaxBuffer = 64 * kMiB;  // largest temporary buffer of one op

traces::OpKind kind_of(const std::string& stream) {
  using traces::OpKind;
  if (stream == "h2d") return OpKind::kH2D;
  if (stream == "d2h") return OpKind::kD2H;
  if (stream == "cpu_optim") return OpKind::kAdamCpu;
  if (stream == "collective") return OpKind::kAllGather;
  return OpKind::kForward;
}
}  // namespace

traces::Plan make_synthetic_plan(int64_t n_ops, int n_streams, uint64_t seed) {
  PROTWIN_CHECK(n_ops >= 0 && n_ops < (int64_t{1} << 31), "--ops: expected 0..2^31-1, got ", n_ops);
  PROTWIN_CHECK(n_streams >= 1 && n_streams <= 64, "--streams: expected 1..64, got ", n_streams);
  std::mt19937_64 rng(seed);
  traces::Plan plan;
  plan.meta = {{"generator", "synthetic"}, {"seed", seed}, {"ops", n_ops}, {"streams", n_streams}};
  static const char* const kNames[] = {"compute", "h2d", "d2h", "cpu_optim", "collective"};
  for (int s = 0; s < n_streams; ++s) {
    plan.streams.push_back({s < 5 ? kNames[s] : "s" + std::to_string(s), {}});
  }
  // Every stream runs at most one op at a time, so n_streams buffers bound each pool.
  const Bytes cap(kMaxBuffer * n_streams);
  plan.pools = {{"gpu", cap, Bytes(0)}, {"pinned", cap, Bytes(0)}};

  plan.ops.resize(static_cast<size_t>(n_ops));
  std::vector<int> stream_of(static_cast<size_t>(n_ops));
  for (int64_t i = 0; i < n_ops; ++i) {
    traces::Op& op = plan.ops[static_cast<size_t>(i)];
    const int s = static_cast<int>(rng() % static_cast<uint64_t>(n_streams));
    stream_of[static_cast<size_t>(i)] = s;
    op.id = static_cast<int>(i);
    op.stream = plan.streams[static_cast<size_t>(s)].name;
    op.kind = kind_of(op.stream);
    // A dependency on a recent op of another stream, if one is in the window.
    if (i > 0 && rng() % 4 != 0) {
      const int64_t back = 1 + static_cast<int64_t>(rng() % kRecent);
      for (int64_t j = i - back; j >= 0 && j >= i - kRecent; --j) {
        if (stream_of[static_cast<size_t>(j)] != s) {
          op.deps.push_back(static_cast<int>(j));
          break;
        }
      }
    }
    const bool copy = op.stream == "h2d" || op.stream == "d2h";
    if (copy) {
      op.work.bytes = static_cast<int64_t>(kMiB + rng() % (16 * kMiB));
    } else {
      op.work.flops = static_cast<double>(1e9 + static_cast<double>(rng() % 9000) * 1e6);
      op.work.bytes = static_cast<int64_t>(rng() % (64 * kMiB));
    }
    const bool host = op.stream == "d2h" || op.stream == "cpu_optim";
    const int64_t buffer = static_cast<int64_t>(1 + rng() % static_cast<uint64_t>(kMaxBuffer));
    const std::string pool = host ? "pinned" : "gpu";
    op.mem.push_back({pool, buffer, traces::MemAt::kStart, -1});
    op.mem.push_back({pool, -buffer, traces::MemAt::kEnd, -1});
  }
  return plan;
}

nlohmann::json synthetic_rates() {
  return nlohmann::json::parse(R"({
    "format": "protwin.rates", "version": 1,
    "note": "made-up rates for the synthetic engine benchmark, not a real machine",
    "links": {"pcie_h2d": {"GBps": 16}, "pcie_d2h": {"GBps": 16}, "host_dram": {"GBps": 40}},
    "streams": {
      "compute": {"tflops": 50, "GBps": 800, "latency_us": 5},
      "h2d": {"latency_us": 3, "links": ["pcie_h2d", "host_dram"], "max_GBps": 12},
      "d2h": {"latency_us": 3, "links": ["pcie_d2h", "host_dram"], "max_GBps": 13},
      "cpu_optim": {"tflops": 0.5, "GBps": 40, "latency_us": 50},
      "collective": {"GBps": 6, "latency_us": 30}
    },
    "default": {"tflops": 10, "GBps": 100, "latency_us": 10}
  })");
}

}  // namespace protwin::sim
