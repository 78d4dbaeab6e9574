// protwin estimate / protwin estimate-search: per-GPU memory of 4D-parallel training (Fujii et al.
// 2024 by default; Megatron, Korthikanti and ZeRO as alternatives) and the search over layouts.
//
// --gpu-memory-GB takes the nominal number printed on the card (40, 80, 94) and, as the authors'
// optimal_setting_search.py does, compares it directly with totals in GiB (1024^3 bytes).
#include <algorithm>
#include <iostream>
#include <optional>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "sim/parallel/estimator/estimate_json.h"
#include "sim/parallel/estimator/memory_estimate.h"
#include "sim/parallel/search/parallel_search.h"
#include "sim/workload/model_spec.h"
#include "traces/error.h"

namespace protwin::cli {
namespace {

using nlohmann::json;

// The estimator switches shared by both subcommands: the numbers straight into the options, the
// names parsed by to_options.
struct SwitchFlags {
  std::string method = "fujii", recompute = "none", embedding_input = "authors";
  std::string zero_formula = "paper";
  sim::parallel::EstimateOptions o;
};

void add_switches(po::options_description& desc, SwitchFlags& f) {
  desc.add_options()
      ("method", po::value(&f.method)->default_value(f.method),
       "fujii | megatron | korthikanti | zero | fsdp (torch FSDP FULL_SHARD, DP only)")
      ("zero-stage", po::value(&f.o.zero_stage)->default_value(f.o.zero_stage),
       "ZeRO stage 0-3 (--method zero)")
      ("zero-formula", po::value(&f.zero_formula)->default_value(f.zero_formula),
       "paper (ZeRO paper) | deepspeed (DeepSpeed's estimators) (--method zero)")
      ("no-distributed-optimizer", "replicate fp32 master + Adam states (18 bytes/param)")
      ("no-fp32-grad-accum", "bf16 gradients (g = 2 bytes instead of 4)")
      ("no-sequence-parallel", "TP without sequence parallelism (megatron, korthikanti)")
      ("no-flash-attn", "keep the s^2 attention-score activations")
      ("recompute", po::value(&f.recompute)->default_value(f.recompute),
       "none | selective | full")
      ("hidden-dropout", po::value(&f.o.hidden_dropout)->default_value(0.0, "0"),
       "hidden dropout probability (non-zero adds dropout masks)")
      ("attention-dropout", po::value(&f.o.attention_dropout)->default_value(0.0, "0"),
       "attention dropout probability")
      ("virtual-stages", po::value(&f.o.virtual_stages),
       "interleaved 1F1B: model chunks per pipeline stage")
      ("num-microbatches", po::value(&f.o.num_microbatches),
       "micro-batches per iteration (discounts activations when fewer than PP)")
      ("pad-vocab", po::value(&f.o.pad_vocab_multiple)->default_value(0),
       "pad the vocabulary to a multiple of this x TP, as Megatron does (128); 0 = off")
      ("embedding-input", po::value(&f.embedding_input)->default_value(f.embedding_input),
       "authors (8*s*b*h*p/t) | upstream (8*s*b*p/t)");
}

sim::parallel::EstimateOptions to_options(const SwitchFlags& f, const po::variables_map& vm) {
  sim::parallel::EstimateOptions o = f.o;
  o.method = sim::parallel::parse_method(f.method);
  o.recompute = sim::parallel::parse_recompute(f.recompute);
  o.distributed_optimizer = !vm.count("no-distributed-optimizer");
  o.fp32_grad_accum = !vm.count("no-fp32-grad-accum");
  o.sequence_parallel = !vm.count("no-sequence-parallel");
  o.flash_attention = !vm.count("no-flash-attn");
  PROTWIN_CHECK(o.hidden_dropout >= 0 && o.hidden_dropout < 1, "--hidden-dropout ",
                o.hidden_dropout, ": expected a probability in [0, 1)");
  PROTWIN_CHECK(o.attention_dropout >= 0 && o.attention_dropout < 1, "--attention-dropout ",
                o.attention_dropout, ": expected a probability in [0, 1)");
  PROTWIN_CHECK(f.embedding_input == "authors" || f.embedding_input == "upstream",
                "--embedding-input ", f.embedding_input, ": expected authors or upstream");
  o.embedding_input = f.embedding_input == "authors" ? sim::parallel::EmbeddingInputTerm::kAuthors
                                                     : sim::parallel::EmbeddingInputTerm::kUpstream;
  PROTWIN_CHECK(f.zero_formula == "paper" || f.zero_formula == "deepspeed", "--zero-formula ",
                f.zero_formula, ": expected paper or deepspeed");
  o.zero_formula = f.zero_formula == "paper" ? sim::parallel::ZeroFormula::kPaper : sim::parallel::ZeroFormula::kDeepSpeed;
  sim::parallel::check_estimate_options(o);
  return o;
}

const char* method_title(sim::parallel::EstimateMethod m) {
  switch (m) {
    case sim::parallel::EstimateMethod::kFujii: return "Fujii et al. 2024 (arXiv 2411.06465), first pipeline stage";
    case sim::parallel::EstimateMethod::kMegatron: return "upstream Megatron-LM theoretical_memory_usage.py";
    case sim::parallel::EstimateMethod::kKorthikanti: return "Korthikanti et al. 2022 (arXiv 2205.05198) activations";
    case sim::parallel::EstimateMethod::kZero: return "ZeRO model states (arXiv 1910.02054)";
    case sim::parallel::EstimateMethod::kFsdp: return "torch FSDP FULL_SHARD (torch 2.0/2.1 flat parameters, bf16 units)";
  }
  return "";
}

int run_estimate(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string model_name;
  sim::parallel::ParallelConfig cfg;
  double gpu_mem = 0;
  SwitchFlags sw;
  desc.add_options()
      ("model", po::value(&model_name), "zoo name, spec file or inline spec (e.g. llama3.1-8b)")
      ("seq", po::value(&cfg.seq), "sequence length (default: the model's default_seq)")
      ("mbs", po::value(&cfg.mbs)->default_value(1), "micro-batch size")
      ("tp", po::value(&cfg.tp)->default_value(1), "tensor-parallel size (with sequence parallelism)")
      ("cp", po::value(&cfg.cp)->default_value(1), "context-parallel size")
      ("pp", po::value(&cfg.pp)->default_value(1), "pipeline-parallel size")
      ("dp", po::value(&cfg.dp)->default_value(1), "data-parallel size")
      ("first-stage-layers", po::value(&cfg.split.first)->default_value(0),
       "decoder layers on the first pipeline stage, the others split the rest (0: even; fujii only)")
      ("last-stage-layers", po::value(&cfg.split.last)->default_value(0),
       "decoder layers on the last pipeline stage (0: even); the estimate is then the largest stage's")
      ("gbs", po::value(&cfg.gbs), "global batch size (checks GBS % (MBS*DP))")
      ("gpus", po::value(&cfg.gpus), "total GPUs (checks TP*CP*PP*DP)")
      ("gpu-memory-GB", po::value(&gpu_mem),
       "nominal GPU memory (40, 80, 94); compared with GiB totals as the authors do")
      ("json", "print JSON");
  add_switches(desc, sw);
  po::variables_map vm;
  if (!parse_options("protwin estimate --model M --seq S --mbs B --tp T --cp C --pp P --dp D "
                     "[--gpu-memory-GB G] [--method fujii|megatron|korthikanti|zero|fsdp] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "model");
  const sim::parallel::EstimateOptions opt = to_options(sw, vm);
  const sim::ModelSpec spec = sim::resolve_model(model_name);
  if (!vm.count("seq")) cfg.seq = spec.default_seq;
  PROTWIN_CHECK(!vm.count("gpus") || cfg.gpus >= 1, "--gpus ", cfg.gpus, ": must be at least 1");
  PROTWIN_CHECK(!vm.count("gpu-memory-GB") || gpu_mem > 0, "--gpu-memory-GB ", gpu_mem, ": must be positive");
  const std::optional<double> memory = vm.count("gpu-memory-GB") ? std::optional<double>(gpu_mem) : std::nullopt;
  const sim::parallel::MemoryEstimate e = sim::parallel::estimate_memory(spec, cfg, opt);

  if (vm.count("json")) {
    json j = sim::parallel::estimate_to_json(e, memory);
    j["model"] = spec.name;
    j["config"] = sim::parallel::config_to_json(cfg);
    j["options"] = sim::parallel::options_to_json(opt);
    return print_json(j);
  }
  const double gib = sim::parallel::MemoryEstimate::kGiB;
  std::cout << "protwin estimate: " << spec.name << ", method " << sim::parallel::method_name(e.method)
            << " (" << method_title(e.method) << ")\n"
            << "layout      TP " << cfg.tp << "  CP " << cfg.cp << "  PP " << cfg.pp << "  DP "
            << cfg.dp << "  MBS " << cfg.mbs << "  seq " << cfg.seq << "  ("
            << cfg.tp * cfg.cp * cfg.pp * cfg.dp << " GPUs)\n"
            << (cfg.split.uneven() ? "stage       " + std::to_string(e.stage) + " of an uneven split (" +
                                         std::to_string(e.stage_layers) + " layers), the largest\n"
                                   : std::string())
            << format("parameters  %.3f B total (V %lld), %.3f B on this GPU, %.3f bytes each\n\n",
                      static_cast<double>(e.params_total) / 1e9, static_cast<long long>(e.vocab_used),
                      e.params_per_gpu / 1e9, e.bytes_per_param)
            << "                                   GiB\n"
            << format("  weights + grads + optimizer %10.3f\n", e.weights_grads_optimizer_gib());
  if (e.activations_included) {
    std::cout << format("  activations                 %10.3f\n", e.activations_gib())
              << format("    transformer layers        %10.3f\n", e.activation_layers_bytes / gib)
              << format("    embedding                 %10.3f\n", e.activation_embedding_bytes / gib)
              << format("    output layer + loss       %10.3f\n", e.activation_output_bytes / gib);
    if (e.activation_schedule_factor != 1.0)
      std::cout << format("    (pipeline schedule factor %.4f)\n", e.activation_schedule_factor);
  } else {
    std::cout << "  activations                  not included\n";
  }
  std::cout << format("  total                       %10.3f\n", e.total_gib());
  if (memory) {
    const double limit = 0.8 * *memory;
    std::cout << "\nGPU memory  " << *memory << " GB nominal (compared as GiB, as the authors do): "
              << format("%.1f %% used; 80 %% rule (%.1f GiB): ", 100.0 * e.total_gib() / *memory, limit)
              << (e.total_gib() <= limit ? "fits" : "does NOT fit")
              << (e.activations_included ? "" : " (model states only)") << "\n";
  }
  for (const auto& n : e.notes) std::cout << "note: " << n << "\n";
  return 0;
}

void print_candidate_row(const sim::parallel::SearchCandidate& c, size_t rank, double memory) {
  const auto& e = c.estimate;
  std::cout << format("%4zu%4lld%4lld%4lld%6lld%5lld%11.2f", rank, static_cast<long long>(c.tp),
                      static_cast<long long>(c.cp), static_cast<long long>(c.pp), static_cast<long long>(c.dp),
                      static_cast<long long>(c.mbs), e.weights_grads_optimizer_gib())
            << (e.activations_included ? format("%10.2f", e.activations_gib()) : format("%10s", "-"))
            << format("%10.2f%8.1f\n", e.total_gib(), 100.0 * e.total_gib() / memory);
}

int run_estimate_search(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string model_name;
  sim::parallel::SearchSpace space;
  int64_t top = 0;
  SwitchFlags sw;
  desc.add_options()
      ("model", po::value(&model_name), "zoo name, spec file or inline spec")
      ("gpus", po::value(&space.gpus), "total GPUs (world size)")
      ("gpus-per-node", po::value(&space.gpus_per_node)->default_value(8),
       "GPUs per node (TP*CP must fit in one node)")
      ("gpu-memory-GB", po::value(&space.gpu_memory_gb),
       "nominal GPU memory (40, 80, 94); compared with GiB totals as the authors do")
      ("seq", po::value(&space.seq), "sequence length (default: the model's default_seq)")
      ("gbs", po::value(&space.gbs), "global batch size")
      ("top", po::value(&top), "list at most K configurations (default: 20 in the table, all in JSON)")
      ("all", "also list feasible configurations over 80 % (for heat maps)")
      ("explain", "list every rejected configuration with its reason")
      ("json", "print JSON");
  add_switches(desc, sw);
  po::variables_map vm;
  if (!parse_options("protwin estimate-search --model M --gpus N --gpus-per-node G "
                     "--gpu-memory-GB X --seq S --gbs B [--json] [--explain] [--top K] [--all]",
                     desc, args, vm))
    return 0;
  for (const char* flag : {"model", "gpus", "gpu-memory-GB", "gbs"}) require(vm, flag);
  PROTWIN_CHECK(!vm.count("top") || top >= 1, "--top ", top, ": must be at least 1");
  const sim::parallel::EstimateOptions opt = to_options(sw, vm);
  const sim::ModelSpec spec = sim::resolve_model(model_name);
  if (!vm.count("seq")) space.seq = spec.default_seq;
  const sim::parallel::ParallelSearchResult r = sim::parallel::search_parallel_configs(spec, space, opt);

  const bool all = vm.count("all") > 0, explain = vm.count("explain") > 0;
  std::vector<const sim::parallel::SearchCandidate*> listed;
  for (const auto& c : r.fitting) listed.push_back(&c);
  if (all) {
    for (const auto& c : r.over) listed.push_back(&c);
    std::stable_sort(listed.begin(), listed.end(), [](auto* x, auto* y) {
      return x->estimate.total_bytes < y->estimate.total_bytes;
    });
  }
  const int64_t rejected = r.enumerated - static_cast<int64_t>(r.fitting.size());

  if (vm.count("json")) {
    json j;
    j["model"] = spec.name;
    j["method"] = sim::parallel::method_name(opt.method);
    j["options"] = sim::parallel::options_to_json(opt);
    j["gpus"] = space.gpus;
    j["gpus_per_node"] = space.gpus_per_node;
    j["gpu_memory_GB"] = space.gpu_memory_gb;
    j["threshold_GiB"] = r.threshold_gib;
    j["seq"] = space.seq;
    j["gbs"] = space.gbs;
    j["activations_included"] = opt.method != sim::parallel::EstimateMethod::kZero;
    j["counts"] = {{"enumerated", r.enumerated},
                   {"fit", r.fitting.size()},
                   {"rejected", rejected},
                   {"rejected_by_reason", r.rejected_by_reason}};
    json rows = json::array();
    for (const auto* c : listed) {
      if (vm.count("top") && static_cast<int64_t>(rows.size()) >= top) break;
      rows.push_back(sim::parallel::candidate_to_json(*c, space.gpu_memory_gb));
    }
    j["configurations"] = rows;
    if (explain) {
      json rej = json::array();
      for (const auto& c : r.rejected) rej.push_back(sim::parallel::candidate_to_json(c, space.gpu_memory_gb));
      for (const auto& c : r.over) rej.push_back(sim::parallel::candidate_to_json(c, space.gpu_memory_gb));
      j["rejected"] = rej;
    }
    return print_json(j);
  }

  std::cout << "protwin estimate-search: " << spec.name << " on " << space.gpus << " GPUs ("
            << space.gpus_per_node << " per node), " << space.gpu_memory_gb << " GB each, seq "
            << space.seq << ", GBS " << space.gbs << ", method " << sim::parallel::method_name(opt.method)
            << "\n"
            << "enumerated " << r.enumerated << " layouts: " << r.fitting.size()
            << format(" fit under 80 %% (%.1f GiB), ", r.threshold_gib) << rejected << " rejected";
  if (!r.rejected_by_reason.empty()) std::cout << " (" << counts_text(r.rejected_by_reason) << ")";
  std::cout << "\n";
  if (opt.method == sim::parallel::EstimateMethod::kZero)
    std::cout << "note: --method zero counts model states only; activations are not included\n";
  if (!listed.empty()) {
    const size_t limit = vm.count("top") ? static_cast<size_t>(top) : 20;
    std::cout << "\n   #  TP  CP  PP    DP  MBS  W+G+O GiB  act GiB  total GiB  % mem\n";
    for (size_t i = 0; i < listed.size() && i < limit; ++i)
      print_candidate_row(*listed[i], i + 1, space.gpu_memory_gb);
    if (listed.size() > limit)
      std::cout << "  ... " << listed.size() - limit << " more (--top K, --json)\n";
  }
  if (explain) {
    std::cout << "\nrejected:\n";
    for (const auto* rejected : {&r.rejected, &r.over})  // the layouts over 80 % all have an MBS
      for (const auto& c : *rejected) {
        std::cout << "  TP " << c.tp << " CP " << c.cp << " PP " << c.pp;
        if (c.mbs > 0) std::cout << " MBS " << c.mbs;
        std::cout << ": " << c.reason << "\n";
      }
  }
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("estimate", "per-GPU memory of 4D-parallel training (Fujii et al.)",
                   protwin::cli::run_estimate)
PROTWIN_SUBCOMMAND("estimate-search", "search TP/CP/PP/DP/MBS layouts that fit under 80 % of GPU memory",
                   protwin::cli::run_estimate_search)
