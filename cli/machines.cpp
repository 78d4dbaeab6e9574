// protwin machines / protwin machine: list the embedded machines, show one (with what-if
// overrides), and fold a measured fragment (e.g. from the GPU probe) into a machine file.
#include <cstdio>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/machine.h"
#include "hwmodels/machine_edit.h"
#include "traces/file_io.h"
#include "traces/json_reader.h"

namespace protwin::cli {
namespace {

// At most `n` bytes of `s`, never splitting a UTF-8 sequence.
std::string clip(const std::string& s, size_t n) {
  return s.size() <= n ? s : traces::utf8_prefix(s, n) + "...";
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024 * 1024); }

int run_machines(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("json", "print JSON instead of a table");
  po::variables_map vm;
  if (!parse_options("protwin machines [--json]", desc, args, vm)) return 0;
  nlohmann::json out = nlohmann::json::array();
  std::string table;  // the same machines, a row each
  for (const auto& name : hw::machine_names()) {
    const hw::HardwareCostModel cm(hw::load_machine(name));
    const hw::Machine& m = cm.machine();
    table += format("%-21s %-24s %3d %8.1f %11.3g %-16s %8.1f %6d %13.0f %4s\n", m.name.c_str(), m.gpu.name.c_str(),
                    m.gpu.count, gib(m.gpu.memory_bytes), m.gpu.compute.at("bf16").sustained_tflops,
                    m.host_link.name.c_str(), m.host_link.h2d.pinned_GBps, m.host.cores,
                    cm.cpu_adam_params_per_s(m.gpu.count) * 1e-6, m.gpu.p2p ? "yes" : "no");
    out.push_back({{"name", m.name},
                   {"description", m.description},
                   {"gpu", m.gpu.name},
                   {"gpu_count", m.gpu.count},
                   {"gpu_memory_bytes", m.gpu.memory_bytes},
                   {"bf16_sustained_tflops", m.gpu.compute.at("bf16").sustained_tflops},
                   {"h2d_pinned_GBps", m.host_link.h2d.pinned_GBps},
                   {"host_link", m.host_link.name},
                   {"host_cores", m.host.cores},
                   {"cpu_adam_params_per_s", cm.cpu_adam_params_per_s(m.gpu.count)},
                   {"p2p", m.gpu.p2p}});
  }
  if (vm.count("json")) return print_json(out);
  std::printf("%-21s %-24s %3s %8s %11s %-16s %8s %6s %13s %4s\n", "NAME", "GPU", "N", "MEM_GiB",
              "BF16_TFLOPS", "HOST_LINK", "H2D_GBps", "CORES", "ADAM_Mparam/s", "P2P");
  std::printf("%s", table.c_str());
  std::printf("\nbf16: sustained GEMM TFLOPS; ADAM: CPU Adam params/s per rank with all GPUs' ranks "
              "sharing the host.\n'protwin machine NAME' shows one machine with provenance.\n");
  return 0;
}

void print_machine(const hw::Machine& m) {
  const hw::HardwareCostModel cm(m);
  std::printf("%s: %s\n(%s)\n\n", m.name.c_str(), m.description.c_str(), m.source.c_str());
  std::printf("%-33s %-36s %s\n", "FIELD", "VALUE", "PROVENANCE");
  // A row: the field, its value and the provenance of the field at `pointer`.
  auto row = [&](const std::string& label, const std::string& value, const std::string& pointer) {
    const nlohmann::json p = m.provenance_of(pointer);
    const std::string kind = p.is_object() ? p.value("kind", "?") : "?";
    const std::string source = p.is_object() ? p.value("source", "") : "";
    std::printf("%-33s %-36s %-8s %s\n", label.c_str(), value.c_str(), kind.c_str(), clip(source, 60).c_str());
  };
  row("gpu", m.gpu.name + " x " + std::to_string(m.gpu.count), "/gpu/count");
  row("gpu memory", format("%.1f GiB", gib(m.gpu.memory_bytes)), "/gpu/memory_bytes");
  for (const auto& [dtype, c] : m.gpu.compute)
    row(dtype + " TFLOPS peak / sustained", format("%.1f / %.1f", c.peak_tflops, c.sustained_tflops),
        "/gpu/compute/" + dtype + "/sustained_tflops");
  row("HBM GB/s peak / achievable", format("%.0f / %.0f", m.gpu.hbm_peak_GBps, m.gpu.hbm_achievable_GBps),
      "/gpu/hbm/achievable_GBps");
  row("launch floor", format("%.1f us", m.gpu.launch_floor_us), "/gpu/launch_floor_us");
  if (m.gpu.attention)
    row("flash attention fwd / bwd TFLOPS",
        format("%.0f / %.0f", m.gpu.attention->flash_fwd_tflops, m.gpu.attention->flash_bwd_tflops),
        "/gpu/attention/flash_fwd_tflops");
  if (m.gpu.sms > 0)
    row("SMs, kernel floor", format("%d, %.1f us", m.gpu.sms, m.gpu.kernel_floor_us), "/gpu/sms");
  if (!m.kernel_tables.names.empty()) {
    std::string names;
    for (const auto& n : m.kernel_tables.names) names += (names.empty() ? "" : ", ") + n;
    if (!m.kernel_tables.measured_on.empty()) names += " (measured on " + m.kernel_tables.measured_on + ")";
    row("kernel tables", m.kernel_tables.enabled ? names : "off", "/kernel_tables");
  }
  row("GPU P2P", m.gpu.p2p ? "yes" : "no", "/gpu/p2p");
  row("host", m.host.cpu + ", " + std::to_string(m.host.cores) + " cores", "/host/cores");
  row("host memory", format("%.0f GiB", gib(m.host.memory_bytes)), "/host/memory_bytes");
  row("host DRAM GB/s", format("%.0f", m.host.dram_GBps), "/host/dram_GBps");
  row("host link", m.host_link.name + format(", %.2f GB/s peak", m.host_link.peak_GBps), "/host_link/peak_GBps");
  row("H2D pinned / pageable GB/s",
      format("%.1f / %.1f", m.host_link.h2d.pinned_GBps, m.host_link.h2d.pageable_GBps),
      "/host_link/h2d/pinned_GBps");
  row("D2H pinned / pageable GB/s",
      format("%.1f / %.1f", m.host_link.d2h.pinned_GBps, m.host_link.d2h.pageable_GBps),
      "/host_link/d2h/pinned_GBps");
  row("copy latency pinned / pageable",
      format("%.0f / %.0f us", m.host_link.h2d.pinned_latency_us, m.host_link.h2d.pageable_latency_us),
      "/host_link/h2d/pinned_latency_us");
  row("kept when both directions run",
      format("H2D %.2f, D2H %.2f", m.host_link.duplex_fraction_h2d, m.host_link.duplex_fraction_d2h),
      "/host_link/duplex_fraction");
  row("CPU Adam (one rank / all ranks)",
      format("%.2f / %.2f Gparam/s per rank", cm.cpu_adam_params_per_s(1) * 1e-9,
             cm.cpu_adam_params_per_s(m.gpu.count) * 1e-9),
      "/cpu_adam/per_core_params_per_s");
  row("GPU Adam bytes/param", format("%.0f", m.gpu_adam.bytes_per_param), "/gpu_adam/bytes_per_param");
  row("all-reduce busbw, alpha",
      format("%.0f GB/s, %.0f us%s", m.intra_node.all_reduce.busbw_GBps, m.intra_node.all_reduce.alpha_us,
             m.intra_node.host_staged ? " (host-staged)" : ""),
      "/collectives/intra_node/all_reduce/busbw_GBps");
  row("all-gather busbw, alpha",
      format("%.0f GB/s, %.0f us", m.intra_node.all_gather.busbw_GBps, m.intra_node.all_gather.alpha_us),
      "/collectives/intra_node/all_gather/busbw_GBps");
  if (m.inter_node)
    row("inter-node all-reduce busbw",
        format("%.0f GB/s", m.inter_node->all_reduce.busbw_GBps), "/collectives/inter_node/all_reduce/busbw_GBps");
  if (m.network)
    row("network (per node)",
        format("%d NICs x %.0f Gb/s = %.0f GB/s achieved", m.network->nics_per_node, m.network->nic_Gbps,
               m.network->node_GBps()),
        "/network/nic_Gbps");
  row("fragmentation fraction", format("%.2f", m.gpu.allocator.fragmentation_fraction),
      "/gpu/allocator/fragmentation_fraction");
  std::printf("\nevery field: 'protwin machine %s --json'; what-if: --set path.to.field=value\n",
              m.name.c_str());
}

int run_merge(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string base, fragment, out;
  desc.add_options()("base", po::value(&base), "machine name or file to start from")(
      "fragment", po::value(&fragment), "measured fragment (machine fields + provenance)")(
      "output,o", po::value(&out), "machine file to write (atomically)");
  po::variables_map vm;
  if (!parse_options("protwin machine merge BASE FRAGMENT -o OUT", desc, args, vm,
                     po::positional_options_description().add("base", 1).add("fragment", 1)))
    return 0;
  require(vm, "base");
  require(vm, "fragment");
  require(vm, "output");
  std::string base_source;
  const nlohmann::json base_json = hw::load_machine_json(base, &base_source);
  hw::machine_from_json(base_json, base_source);  // a valid base: what fails below is the fragment's
  const nlohmann::json frag_json = traces::JsonDocument::load(fragment).json();
  const nlohmann::json merged = hw::merge_machine_json(base_json, frag_json, fragment);
  // Refuse to write an invalid machine; errors name the fragment (and the merged pointer).
  hw::machine_from_json(merged, fragment + " (merged into " + base_source + ")");
  traces::write_file_atomic(out, merged.dump(2) + "\n");
  std::printf("wrote %s: %s merged into %s\n", out.c_str(), fragment.c_str(), base_source.c_str());
  return 0;
}

int run_machine(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "merge") return run_merge({args.begin() + 1, args.end()});
  po::options_description desc("options");
  std::string name;
  std::vector<std::string> sets;
  desc.add_options()("name", po::value(&name), "machine name (see 'protwin machines') or file")(
      "set", po::value(&sets)->composing(), "override a field, e.g. host_link.h2d.pinned_GBps=32 (repeatable)")(
      "json", "print the full machine JSON (overrides applied)");
  po::variables_map vm;
  if (!parse_options("protwin machine NAME [--set path=value ...] [--json]\n"
                     "       protwin machine merge BASE FRAGMENT -o OUT",
                     desc, args, vm, po::positional_options_description().add("name", 1)))
    return 0;
  require(vm, "name");
  const hw::Machine m = hw::load_machine(name, sets);
  if (vm.count("json")) print_json(m.json);
  else print_machine(m);
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("machines", "list the machines the twin knows", protwin::cli::run_machines)
PROTWIN_SUBCOMMAND("machine", "show a machine (with --set what-ifs), or merge measurements into one",
                   protwin::cli::run_machine)
