// protwin capacity: the largest model of a family each system can train on a machine (the ladder
// and its bisection: sim/offload/search/capacity.h).
#include <cstdio>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "sim/distributed/evaluate_points.h"
#include "sim/offload/search/capacity.h"
#include "traces/error.h"

namespace protwin::cli {
namespace {

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
  // The family is scaled at batch 1 (the largest model that trains at all); a given model or
  // batch would be ignored, so it is refused.
  for (const char* flag : {"model", "batch"})
    PROTWIN_CHECK(!vm.count(flag) || vm[flag].defaulted(), "--", flag, ": capacity scales the ", family,
                  " family (layers at hidden 4096 and 8192) at batch 1; it takes no --", flag);
  pa.batch = "1";
  PolicyInputs in = resolve_policy_inputs(pa);
  const std::vector<std::string> names = parse_systems(systems_arg, "systems");
  Progress bar("capacity", static_cast<long>(names.size() * 2));
  // One system per point (over MPI ranks under mpirun); each bisects its own layer count.
  const std::function<nlohmann::json(size_t)> largest_model = [&](size_t i) {
    sim::offload::SearchOptions o = in.search;
    o.system = names[i];
    o.threads = pa.threads;
    const sim::offload::Capacity c = sim::offload::largest_gpt2_model(*in.cost, o, max_layers, [&] { bar.tick(); });
    nlohmann::json j = {{"name", names[i]}, {"max_params", c.max_params}};
    if (c.max_params > 0) j.update(nlohmann::json(c));
    return j;
  };
  nlohmann::json out = nlohmann::json::array();
  for (const auto& outcome : sim::evaluate_points(names.size(), 1, largest_model))
    out.push_back(outcome.get());
  bar.done();
  if (vm.count("json"))
    return print_json({{"family", family}, {"machine", in.cost->machine().name}, {"gpus", in.search.gpus},
                       {"nodes", in.search.nodes},
                       {"seq", in.search.seq > 0 ? in.search.seq : sim::offload::kGpt2Positions},
                       {"flash", in.search.flash_attention}, {"systems", out}});
  std::printf("largest GPT-2-family model per system on %s, %d GPU(s)%s, batch 1, sequence %lld, %s attention "
              "(simulated plans that fit GPU and host memory)\n\n",
              in.cost->machine().name.c_str(), in.search.gpus,
              in.search.nodes > 1 ? (" on " + std::to_string(in.search.nodes) + " nodes").c_str() : "",
              static_cast<long long>(in.search.seq > 0 ? in.search.seq : sim::offload::kGpt2Positions),
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
