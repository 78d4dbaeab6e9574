// protwin capacity: the largest model of a family each system can train on a machine.
//
// The GPT-2 family is scaled the way the Colossal-AI/PatrickStar ladder that ProTrain used is:
// GPT-2 layers (vocab 50257, 1024 learned positions, GeLU 4h MLP, tied embeddings) at hidden
// 4096 (16 heads, as gpt2-10b/15b) or 8192 (16 heads, as gpt2-20b), with as many layers as fit.
// A model "can be trained" when the system's search finds a setting at batch 1 whose simulated
// plan fits every memory pool (GPU, pinned and pageable host). Layers are found by bisection.
// At --seq beyond 1024 the ladder's learned position table grows to --seq rows (as a long-context
// GPT-2 is trained), so the longest sequence sets the embedding's size, not GPT-2's 1024.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "sim/distributed/evaluate_points.h"
#include "traces/error.h"

namespace protwin::cli {
namespace {

constexpr int64_t kGpt2Positions = 1024;

sim::ModelSpec gpt2_family(int64_t hidden, int64_t layers, int64_t seq) {
  return sim::resolve_model("gpt2:hidden=" + std::to_string(hidden) + ",layers=" + std::to_string(layers) +
                            ",heads=16,vocab=50257,max_positions=" + std::to_string(std::max(kGpt2Positions, seq)));
}

int run_capacity(const std::vector<std::string>& args) {
  po::options_description desc("options");
  PolicyArgs pa;
  std::string family = "gpt2", systems_arg;
  int64_t max_layers = 512;
  desc.add_options()
      ("family", po::value(&family)->default_value("gpt2"), "model family (gpt2)")
      ("systems", po::value(&systems_arg), "comma-separated systems (default: all)")
      ("max-layers", po::value(&max_layers)->default_value(512), "largest layer count tried")
      ("json", "print JSON");
  add_policy_options(desc, pa);
  po::variables_map vm;
  if (!parse_options("protwin capacity --family gpt2 --machine H --gpus N [--nodes K] [--seq S] [--json]", desc, args, vm))
    return 0;
  PROTWIN_CHECK(family == "gpt2", "--family: only 'gpt2' is supported, got '", family, "'");
  PROTWIN_CHECK(max_layers >= 1, "--max-layers: expected at least 1, got ", max_layers);
  // The family is scaled at batch 1 (the largest model that trains at all); a given model or
  // batch would be ignored, so it is refused.
  for (const char* flag : {"model", "batch"})
    PROTWIN_CHECK(!vm.count(flag) || vm[flag].defaulted(), "--", flag, ": capacity scales the ", family,
                  " family (layers at hidden 4096 and 8192) at batch 1; it takes no --", flag);
  pa.batch = "1";
  PolicyInputs in = resolve_policy_inputs(pa);
  const std::vector<std::string> names = parse_systems(systems_arg, "systems");
  const int64_t hiddens[] = {4096, 8192};
  Progress bar("capacity", static_cast<long>(names.size() * 2));
  // One system per point (over MPI ranks under mpirun); each bisects its own layer count.
  const std::function<nlohmann::json(size_t)> largest_model = [&](size_t i) {
    const std::string& name = names[i];
    sim::SearchOptions o = in.search;
    o.system = name;
    o.batch = 1;
    o.simulate_top = 2;
    o.threads = pa.threads;
    std::map<std::string, int64_t> priced_by, fitting_priced_by;  // of the last plan that fit
    auto fits = [&](int64_t hidden, int64_t layers) {
      const sim::SearchResult r = sim::search_policy(gpt2_family(hidden, layers, o.seq), *in.cost, o);
      if (r.found) fitting_priced_by = r.best.priced_by;
      return r.found;
    };
    const sim::RankMemory cap = sim::rank_memory(in.cost->machine(), o.gpus, o.nodes);
    // What stops the next size: GPU memory, host memory (each alone would not suffice for any
    // setting), or the two together.
    auto limited_by = [&](int64_t hidden, int64_t layers) {
      const sim::SearchResult r = sim::search_policy(gpt2_family(hidden, layers, o.seq), *in.cost, o);
      const bool gpu = r.least_gpu_bytes > cap.gpu_bytes, host = r.least_host_bytes > cap.host_bytes;
      return nlohmann::json{{"layers", layers},
                            {"least_gpu_bytes", r.least_gpu_bytes},
                            {"least_host_bytes", r.least_host_bytes},
                            {"smallest_peak_gpu_bytes", r.smallest_peak_gpu_bytes},
                            {"smallest_host_bytes", r.smallest_host_bytes},
                            {"limited_by", gpu && host ? "gpu and host memory"
                                           : gpu       ? "gpu memory"
                                           : host      ? "host memory"
                                                       : "gpu and host memory together"}};
    };
    int64_t best_params = 0, best_hidden = 0, best_layers = 0;
    for (int64_t h : hiddens) {
      bar.tick();
      if (!fits(h, 1)) continue;
      int64_t lo = 1, hi = max_layers;  // fits(lo); find the largest that fits
      if (fits(h, hi)) lo = hi;
      while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (fits(h, mid)) lo = mid;
        else hi = mid - 1;
      }
      const int64_t params = gpt2_family(h, lo, o.seq).parameter_count();
      if (params > best_params) {
        best_params = params;
        best_hidden = h;
        best_layers = lo;
        priced_by = fitting_priced_by;  // bisection's last fitting call was at lo
      }
    }
    nlohmann::json j = {{"name", name}, {"max_params", best_params}};
    if (best_params > 0)
      j.update({{"hidden", best_hidden}, {"layers", best_layers}, {"next_size", limited_by(best_hidden, best_layers + 1)},
                {"priced_by", priced_by}});
    return j;
  };
  const auto same = [](const nlohmann::json& j) { return j; };
  nlohmann::json out = nlohmann::json::array();
  for (const auto& outcome : sim::evaluate_points(names.size(), 1, largest_model, sim::PointCodec<nlohmann::json>{same, same}))
    out.push_back(outcome.get());
  bar.done();
  if (vm.count("json")) {
    print_json({{"family", family}, {"machine", in.cost->machine().name}, {"gpus", in.search.gpus},
                {"nodes", in.search.nodes}, {"seq", in.search.seq > 0 ? in.search.seq : kGpt2Positions},
                {"flash", in.search.flash_attention}, {"systems", out}});
    return 0;
  }
  std::printf("largest GPT-2-family model per system on %s, %d GPU(s)%s, batch 1, sequence %lld, %s attention "
              "(simulated plans that fit GPU and host memory)\n\n",
              in.cost->machine().name.c_str(), in.search.gpus,
              in.search.nodes > 1 ? (" on " + std::to_string(in.search.nodes) + " nodes").c_str() : "",
              static_cast<long long>(in.search.seq > 0 ? in.search.seq : kGpt2Positions),
              in.search.flash_attention ? "flash" : "eager");
  std::printf("%-13s %14s %8s %7s  %s\n", "system", "parameters", "hidden", "layers", "one layer more is stopped by");
  for (const auto& j : out) {
    if (j["max_params"].get<int64_t>() == 0) {
      std::printf("%-13s %14s\n", j["name"].get<std::string>().c_str(), "none fits");
      continue;
    }
    std::printf("%-13s %12.2f B %8lld %7lld  %s\n", j["name"].get<std::string>().c_str(),
                static_cast<double>(j["max_params"].get<int64_t>()) / 1e9,
                static_cast<long long>(j["hidden"].get<int64_t>()), static_cast<long long>(j["layers"].get<int64_t>()),
                j["next_size"]["limited_by"].get<std::string>().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("capacity", "the largest GPT-2-family model each system can train on a machine", protwin::cli::run_capacity)
