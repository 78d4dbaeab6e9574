// protwin models / protwin model: the model zoo and one model's workload (blocks, flops,
// activation memory).
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "sim/workload/model_spec.h"
#include "sim/workload/workload.h"

namespace protwin::cli {
namespace {

// 124439808 -> "124,439,808"
std::string grouped(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

int run_models(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("json", "print the zoo as JSON");
  po::variables_map vm;
  if (!parse_options("protwin models [--json]", desc, args, vm)) return 0;

  if (vm.count("json")) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& name : sim::model_names()) {
      const auto m = sim::find_model(name);
      auto j = sim::model_to_json(m);
      j["params"] = m.parameter_count();
      a.push_back(j);
    }
    return print_json(a);
  }
  std::printf("%-14s%-7s%17s%7s%5s%7s%5s%7s%8s\n", "name", "family", "params", "h", "L", "heads", "kv", "ffn",
              "vocab");
  for (const auto& name : sim::model_names()) {
    const auto m = sim::find_model(name);
    std::printf("%-14s%-7s%17s%7lld%5lld%7lld%5lld%7lld%8lld\n", m.name.c_str(), m.family.c_str(),
                grouped(m.parameter_count()).c_str(), static_cast<long long>(m.hidden),
                static_cast<long long>(m.layers), static_cast<long long>(m.heads), static_cast<long long>(m.kv_heads),
                static_cast<long long>(m.ffn_hidden), static_cast<long long>(m.vocab));
  }
  std::cout << "\n'protwin model NAME' shows one model's blocks, flops and activation memory.\n";
  return 0;
}

void print_block_row(const sim::Block& b, const std::string& label) {
  const double mib = 1024.0 * 1024.0;
  std::cout << format("%-16s%15s%12.2f%12.2f%11.1f%10.1f%10.1f%10.1f\n", label.c_str(), grouped(b.param_count).c_str(),
                      b.forward_flops() * 1e-9, b.backward_flops() * 1e-9, static_cast<double>(b.saved_bytes) / mib,
                      static_cast<double>(b.checkpoint_bytes) / mib,
                      static_cast<double>(b.forward_transient_bytes) / mib,
                      static_cast<double>(b.backward_transient_bytes) / mib);
}

int run_model(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string name;
  sim::WorkloadOptions o;
  desc.add_options()
      ("model", po::value(&name), "zoo name, spec JSON file, or inline spec 'gpt:hidden=1024,layers=24,heads=16'")
      ("batch", po::value(&o.batch)->default_value(1), "micro-batch size")
      ("seq", po::value(&o.seq)->default_value(0), "sequence length (0: the model's default)")
      ("dtype", po::value(&o.dtype)->default_value("fp16"), "compute dtype: fp16, bf16 or fp32")
      ("no-flash", "unfused attention instead of FlashAttention")
      ("dropout", "with dropout (attention probabilities, residuals, embedding)")
      ("kernels", "with --json: list every block's parameter tensors, saved tensors and kernels")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("protwin model NAME [--batch B] [--seq S] [--dtype bf16] [--no-flash] "
                     "[--dropout] [--json [--kernels]]",
                     desc, args, vm, po::positional_options_description().add("model", 1)))
    return 0;
  require(vm, "model");
  o.flash_attention = !vm.count("no-flash");
  o.dropout = vm.count("dropout") > 0;

  const sim::ModelSpec m = sim::resolve_model(name);
  const sim::Workload w = sim::build_workload(m, o);
  if (vm.count("json")) return print_json(sim::workload_to_json(w, vm.count("kernels") > 0));
  const double mib = 1024.0 * 1024.0;
  std::cout << "model:        " << m.name << " (" << m.family << ", " << m.source << ")\n";
  if (!m.citation.empty()) std::cout << "source:       " << m.citation << "\n";
  std::cout << "shape:        h " << m.hidden << ", L " << m.layers << ", heads " << m.heads
            << ", kv heads " << m.kv_heads << ", ffn " << m.ffn_hidden << ", vocab " << m.vocab
            << (m.max_positions ? ", learned positions " + std::to_string(m.position_rows()) : ", RoPE")
            << (m.tied_embeddings ? ", tied embeddings" : ", untied head") << "\n";
  std::cout << "params:       " << grouped(w.parameter_count()) << "\n";
  std::cout << "workload:     batch " << w.options.batch << ", seq " << w.options.seq << ", "
            << w.options.dtype << (w.options.flash_attention ? ", flash attention" : ", unfused attention")
            << (w.options.dropout ? ", dropout" : "") << "\n";
  std::cout << "flops/token:  " << format("%.4g", w.flops_per_token()) << " (forward + backward, no recompute)\n";
  std::cout << "iteration:    " << format("%.4g", (w.forward_flops() + w.backward_flops()) * 1e-12) << " TFLOP\n";
  std::cout << format("activations:  %.2f MiB per layer kept, %.2f MiB checkpointed\n\n",
                      static_cast<double>(w.activation_bytes_per_layer()) / mib,
                      static_cast<double>(w.layer(0).checkpoint_bytes) / mib);
  std::printf("%-16s%15s%12s%12s%11s%10s%10s%10s\n", "block", "params", "fwd GFLOP", "bwd GFLOP", "saved MiB",
              "ckpt MiB", "fwd tmp", "bwd tmp");
  print_block_row(w.blocks.front(), w.blocks.front().name);
  // Decoder layers are identical: one row for all of them.
  print_block_row(w.layer(0), m.layers == 1 ? "layer.0" : "layer.0.." + std::to_string(m.layers - 1));
  print_block_row(w.blocks.back(), w.blocks.back().name);
  std::cout << "(decoder row: per layer; tmp = largest temporaries inside the block, MiB)\n";
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("models", "list the model zoo", protwin::cli::run_models)
PROTWIN_SUBCOMMAND("model", "one model's blocks, flops per token and activation memory",
                   protwin::cli::run_model)
