#include "cli/policy_options.h"

#include <charconv>
#include <tuple>

#include "sim/offload/compiler/systems.h"
#include "traces/error.h"

namespace protwin::cli {

void add_policy_options(po::options_description& desc, PolicyArgs& a) {
  desc.add_options()
      ("model", po::value(&a.model)->default_value(a.model), "zoo name, spec file, or inline spec (gpt:hidden=...,layers=...)")
      ("machine", po::value(&a.machine)->default_value(a.machine), "machine name or file (protwin machines lists them)")
      ("gpus", po::value(&a.gpus)->default_value(0), "data-parallel GPUs, all nodes together (0: all GPUs of the nodes)")
      ("nodes", po::value(&a.nodes),
       "nodes of the machine the GPUs spread over evenly, linked by its inter-node network (default: one node, or "
       "as many whole nodes as --gpus fills)")
      ("batch", po::value(&a.batch)->default_value("auto"), "micro-batch per GPU, or 'auto' to search it")
      ("seq", po::value(&a.seq)->default_value(0), "sequence length (0: the model's default)")
      ("set", po::value(&a.set)->composing(), "override a machine field, e.g. host_link.h2d.pinned_GBps=32 (repeatable)")
      ("dtype", po::value(&a.dtype)->default_value(a.dtype), "compute dtype: fp16, bf16, or fp32 (plans for the runtime)")
      ("flash", po::bool_switch(&a.flash), "use FlashAttention (default: eager attention, as the papers' systems)")
      ("hf-eager", po::bool_switch(&a.hf_eager),
       "GPT-2 family: HuggingFace GPT2Block's eager kernels (gelu_new unfused, separate attention scale and mask) "
       "and its default dropout 0.1, as the papers' systems ran it (default: fused kernels, no dropout)")
      ("threads", po::value(&a.threads)->default_value(2), "threads simulating candidates");
  add_cost_options(desc, a.no_host_dispatch, a.profile);
}

PolicyInputs resolve_policy_inputs(const PolicyArgs& a) {
  const sim::ModelSpec model = sim::resolve_model(a.model);  // an unknown model is said before a bad machine
  PolicyInputs in{hw::machine_cost_model({a.machine, a.set, a.no_host_dispatch, a.profile, ""}), model, {}};
  std::tie(in.search.gpus, in.search.nodes) = sim::offload::place_ranks(*in.cost, a.gpus, a.nodes);
  if (a.batch != "auto") {  // auto: batch 0, searched
    long long b = 0;
    const char* end = a.batch.data() + a.batch.size();
    const auto parsed = std::from_chars(a.batch.data(), end, b);
    PROTWIN_CHECK(parsed.ec == std::errc() && parsed.ptr == end && b >= 1,
                  "--batch: expected a positive integer or 'auto', got '", a.batch, "'");
    check_flag_range("batch", b);
    in.search.batch = b;
  }
  in.search.seq = a.seq;
  in.search.flash_attention = a.flash;
  in.search.hf_eager = a.hf_eager;
  PROTWIN_CHECK(a.dtype == "fp16" || a.dtype == "bf16" || a.dtype == "fp32", "--dtype: expected fp16, bf16 or fp32, got '",
                a.dtype, "'");
  in.search.dtype = a.dtype;
  in.search.threads = a.threads;
  return in;
}

std::vector<std::string> parse_systems(const std::string& arg, const std::string& flag) {
  std::vector<std::string> names;
  if (arg.empty() || arg == "all") {
    for (const auto& s : sim::offload::systems()) names.push_back(s.name);
    return names;
  }
  for (size_t start = 0;;) {
    const size_t comma = arg.find(',', start);
    names.push_back(arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    PROTWIN_CHECK(sim::offload::lookup_system(names.back()), "--", flag, " ", arg, ": unknown system '", names.back(),
                  "'; known systems: ", sim::offload::known_systems());
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

std::string human_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return format("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return format("%.1f MiB", b / (1024.0 * 1024));
  return format("%lld B", static_cast<long long>(bytes));
}

}  // namespace protwin::cli
