// protwin bench <what>: micro-benchmarks of protwin's own machinery (DESIGN §11: speed is
// measured by benchmarks, never by timed unit tests). Each benchmark is one entry of kBenches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <queue>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "hwmodels/rate_cost_model.h"
#include "sim/engine/plan_simulator.h"
#include "sim/engine/synthetic_plan.h"
#include "sim/offload/search/search.h"
#include "traces/error.h"
#include "traces/thread_cpu_time.h"

namespace protwin::cli {
namespace {

struct Timing {
  double seconds = std::numeric_limits<double>::infinity();      // best wall time (steady_clock)
  double cpu_seconds = std::numeric_limits<double>::infinity();  // best thread CPU time
};

// Runs `fn` `repeat` times; keeps the best wall and the best CPU time.
template <typename Fn>
Timing best_of(int repeat, Fn&& fn) {
  Timing best;
  for (int r = 0; r < repeat; ++r) {
    const double c0 = traces::thread_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    const double c1 = traces::thread_cpu_seconds();
    best.seconds = std::min(best.seconds, std::chrono::duration<double>(t1 - t0).count());
    best.cpu_seconds = std::min(best.cpu_seconds, c1 - c0);
  }
  return best;
}

// The yardstick of bench engine: a bare discrete-event loop on std::priority_queue, `events`
// events with `pending` in flight (each pop schedules one successor a pseudo-random delay later),
// the least any event-driven simulator does per event. Returns a checksum so nothing is elided.
uint64_t bare_heap_loop(uint64_t events, int pending) {
  struct Ev {
    int64_t time;
    uint64_t sequence;
    bool operator>(const Ev& o) const { return time != o.time ? time > o.time : sequence > o.sequence; }
  };
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> heap;
  uint64_t sequence = 0, state = 88172645463325252ull, sum = 0;
  auto delay = [&] {  // xorshift64: 1..1024 ns
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return static_cast<int64_t>(state & 1023) + 1;
  };
  for (int p = 0; p < pending; ++p) heap.push({delay(), sequence++});
  for (uint64_t e = 0; e < events; ++e) {
    const Ev ev = heap.top();
    heap.pop();
    sum += ev.sequence;
    heap.push({ev.time + delay(), sequence++});
  }
  return sum + static_cast<uint64_t>(heap.top().time);
}

// bench engine: PlanSimulator::run on a synthetic plan (plan building is not timed), and the bare
// heap loop over the same number of events in the same process: their ratio is what a figure from
// another machine can be compared with.
int bench_engine(const std::vector<std::string>& args) {
  po::options_description desc("options");
  int64_t ops = 1000000;
  int streams = 5, repeat = 3;
  uint64_t seed = 1;
  desc.add_options()
      ("what", po::value<std::string>(), "the benchmark (positional): engine")
      ("ops", po::value(&ops)->default_value(ops), "ops in the synthetic plan")
      ("streams", po::value(&streams)->default_value(streams), "streams in the synthetic plan")
      ("repeat", po::value(&repeat)->default_value(repeat), "runs; the best is reported")
      ("seed", po::value(&seed)->default_value(seed), "seed of the synthetic plan")
      ("json", "print JSON {ops, streams, seconds, ops_per_s}");
  po::variables_map vm;
  if (!parse_options("protwin bench engine [--ops N] [--streams S] [--repeat R] [--json]", desc, args, vm,
                     po::positional_options_description().add("what", 1)))
    return 0;
  PROTWIN_CHECK(ops >= 1, "--ops: expected at least 1, got ", ops);
  PROTWIN_CHECK(repeat >= 1, "--repeat: expected at least 1, got ", repeat);

  const traces::Plan plan = sim::make_synthetic_plan(ops, streams, seed);
  const auto rates = hw::RateCostModel::from_json(sim::synthetic_rates(), "built-in synthetic rates");
  const sim::PlanSimulator simulator(rates);
  SimTime iteration;
  sim::RunStats stats;
  double loop_cpu_s = std::numeric_limits<double>::infinity();
  uint64_t checksum = 0;
  const Timing t = best_of(repeat, [&] {
    iteration = simulator.run(plan, &stats).iteration;
    loop_cpu_s = std::min(loop_cpu_s, stats.event_loop_cpu_s);
  });
  const uint64_t events = stats.events;
  const Timing heap = best_of(repeat, [&] { checksum += bare_heap_loop(events, streams); });
  const double ops_per_s = static_cast<double>(ops) / t.seconds;
  const double cpu_ops_per_s = static_cast<double>(ops) / t.cpu_seconds;
  const double events_per_s = static_cast<double>(events) / t.cpu_seconds;
  const double loop_events_per_s = static_cast<double>(events) / loop_cpu_s;
  const double heap_events_per_s = static_cast<double>(events) / heap.cpu_seconds;
  const double ratio = events_per_s / heap_events_per_s, loop_ratio = loop_events_per_s / heap_events_per_s;

  if (vm.count("json"))
    return print_json({{"ops", ops}, {"streams", streams}, {"seconds", t.seconds}, {"ops_per_s", ops_per_s},
                       {"cpu_seconds", t.cpu_seconds}, {"cpu_ops_per_s", cpu_ops_per_s}, {"events", events},
                       {"events_per_s", events_per_s}, {"event_loop_cpu_seconds", loop_cpu_s},
                       {"event_loop_events_per_s", loop_events_per_s}, {"heap_cpu_seconds", heap.cpu_seconds},
                       {"heap_events_per_s", heap_events_per_s}, {"engine_vs_heap", ratio},
                       {"event_loop_vs_heap", loop_ratio},
                       {"heap_checksum", checksum}});
  std::printf("engine: %lld ops on %d streams, best of %d: %.3f s = %.2f M ops/s "
              "(thread CPU %.3f s = %.2f M ops/s; simulated iteration %.3f s)\n",
              static_cast<long long>(ops), streams, repeat, t.seconds, ops_per_s / 1e6,
              t.cpu_seconds, cpu_ops_per_s / 1e6, iteration.seconds());
  std::printf("events: %llu engine events = %.2f M events/s over the whole run, %.2f M events/s in the event "
              "loop alone (%.3f s; thread CPU)\nbare std::priority_queue loop over as many events (%d in flight): "
              "%.3f s = %.2f M events/s\nengine / bare heap = %.3f (whole run), %.3f (event loop)\n",
              static_cast<unsigned long long>(events), events_per_s / 1e6, loop_events_per_s / 1e6, loop_cpu_s,
              streams, heap.cpu_seconds, heap_events_per_s / 1e6, ratio, loop_ratio);
  return 0;
}

// bench policy: one simulated iteration of a searched plan, and the search itself.
int bench_policy(const std::vector<std::string>& args) {
  po::options_description desc("options");
  PolicyArgs pa;
  int repeat = 20;
  desc.add_options()
      ("what", po::value<std::string>(), "the benchmark (positional): policy")
      ("repeat", po::value(&repeat)->default_value(repeat), "simulations timed; the best is reported")
      ("json", "print JSON {model, machine, gpus, plan_ops, simulate_ms, search_s}");
  add_policy_options(desc, pa);
  po::variables_map vm;
  if (!parse_options("protwin bench policy [--model M] [--machine H] [--gpus N] [--json]", desc, args, vm,
                     po::positional_options_description().add("what", 1)))
    return 0;
  PROTWIN_CHECK(repeat >= 1, "--repeat: expected at least 1, got ", repeat);
  PolicyInputs in = resolve_policy_inputs(pa);
  sim::offload::SearchResult r;
  const Timing search = best_of(1, [&] { r = sim::offload::search_policy(in.model, *in.cost, in.search); });
  PROTWIN_CHECK(r.found, "model ", in.model.name, " does not fit on ", in.cost->machine().name);
  const sim::PlanSimulator simulator(*in.cost);
  const Timing sim_t = best_of(repeat, [&] { simulator.run(r.best_plan.plan); });
  if (vm.count("json"))
    return print_json({{"model", in.model.name}, {"machine", in.cost->machine().name}, {"gpus", in.search.gpus},
                       {"plan_ops", r.best_plan.plan.ops.size()}, {"simulate_ms", sim_t.seconds * 1e3},
                       {"search_s", search.seconds}, {"settings", r.configurations}, {"simulated", r.simulated},
                       {"settings_per_s", static_cast<double>(r.configurations) / search.seconds}});
  std::printf("policy: %s on %s, %d GPU(s): one simulated iteration (%zu ops) %.3f ms (best of %d); "
              "search %.3f s wall (%ld settings, %ld simulated) = %.0f settings/s\n",
              in.model.name.c_str(), in.cost->machine().name.c_str(), in.search.gpus,
              r.best_plan.plan.ops.size(), sim_t.seconds * 1e3, repeat, search.seconds, r.configurations,
              r.simulated, static_cast<double>(r.configurations) / search.seconds);
  return 0;
}

// bench adam / stability: these benchmarks live in the LibTorch runtime binary.
int bench_runtime(const std::vector<std::string>& args) {
  std::vector<std::string> rt = {"bench"};
  rt.insert(rt.end(), args.begin(), args.end());
  return run_runtime_binary(rt);
}

struct Bench {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // gets all args, the name included
};

const Bench kBenches[] = {
    {"engine", "PlanSimulator::run on a synthetic plan (ops/s)", bench_engine},
    {"policy", "one simulated iteration of a searched plan, and the search (wall time)", bench_policy},
    {"adam", "protwin's CPU Adam against torch::optim::Adam (LibTorch runtime)", bench_runtime},
    {"stability", "how steady this machine's compute speed is: a fixed GEMM sampled (LibTorch runtime)", bench_runtime},
};

int run_bench(const std::vector<std::string>& args) {
  std::string known;
  for (const Bench& b : kBenches) known += std::string(known.empty() ? "" : ", ") + b.name;
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: protwin bench <what> [options]   (protwin bench <what> --help for more)\n\n"
                 "benchmarks:\n";
    for (const Bench& b : kBenches) std::cout << "  " << b.name << "  " << b.summary << "\n";
    if (args.empty()) throw Error("which benchmark? known: " + known + "\nhint: protwin bench engine");
    return 0;
  }
  for (const Bench& b : kBenches)
    if (args[0] == b.name) return b.run(args);
  throw Error("unknown benchmark \"" + args[0] + "\"; known: " + known);
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("bench", "benchmarks of protwin itself (engine, policy, adam) and of this machine (stability)",
                   protwin::cli::run_bench)
