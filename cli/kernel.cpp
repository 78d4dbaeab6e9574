// protwin kernel: one GPU kernel's predicted time and where it came from (measured table,
// interpolated, derived, shape-aware model), or every entry of a profile (--queries).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "hwmodels/hardware_cost_model.h"
#include "hwmodels/kernel_model.h"
#include "hwmodels/machine.h"
#include "traces/error.h"
#include "traces/op_profile.h"
#include "traces/kernel_kinds.h"

namespace protwin::cli {
namespace {

// --gemm M,N,K or B,M,N,K.
std::vector<int64_t> parse_gemm_dims(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    PROTWIN_CHECK(!part.empty() && end && *end == '\0' && v >= 1 && v <= (1LL << 40),
                  "--gemm: expected positive integers separated by commas, got \"", text, "\"");
    dims.push_back(v);
  }
  PROTWIN_CHECK(dims.size() == 3 || dims.size() == 4, "--gemm: expected 3 or 4 dimensions (M,N,K or B,M,N,K), got \"",
                text, "\"");
  return dims;
}

struct Query {
  hw::KernelTime time;
  double flops = 0, bytes = 0;
};

Query price(const hw::HardwareCostModel& cost, const traces::OpSignature& sig, double bytes) {
  const auto& s = sig.shape;
  if (sig.kind == "gemm" || sig.kind == "bmm") {
    const bool batched = sig.kind == "bmm";
    const int64_t b = batched ? s[0] : 1, m = s[batched ? 1 : 0], n = s[batched ? 2 : 1], k = s[batched ? 3 : 2];
    return {cost.gemm_time(b, m, n, k, sig.dtype), 2.0 * b * m * n * k, bytes};
  }
  if (traces::is_collective_kind(sig.kind))
    return {cost.collective_time(sig.kind, static_cast<double>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2])),
            0, bytes};
  traces::Kernel k{sig, 1, 0, bytes};
  return {cost.kernel_time(k), 0, bytes};
}

int run_kernel(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string machine, dtype = "fp16", gemm, op, collective, queries;
  std::vector<std::string> set, tables;
  int64_t elements = 0, ranks = 0, ranks_per_node = 0;
  double bytes = 0;
  desc.add_options()
      ("machine", po::value(&machine), "machine name or file (protwin machines lists them)")
      ("set", po::value(&set)->composing(), "override a machine field (repeatable)")
      ("dtype", po::value(&dtype)->default_value(dtype), "fp16 | bf16 | fp32 (GEMMs and --op)")
      ("gemm", po::value(&gemm), "a GEMM M,N,K (C[M,N] = A[M,K] B[K,N]) or a batched one B,M,N,K")
      ("op", po::value(&op), "a memory-bound kernel: layernorm | rmsnorm | softmax | gelu | add | swiglu | dropout")
      ("elements", po::value(&elements), "--op: elements it processes")
      ("collective", po::value(&collective), "all_reduce | all_gather | reduce_scatter | broadcast | send_recv")
      ("bytes", po::value(&bytes), "--collective: bytes of the buffer (send_recv: of the message)")
      ("ranks", po::value(&ranks), "--collective: ranks in the group (send_recv: 2)")
      ("ranks-per-node", po::value(&ranks_per_node), "--collective: ranks on each node (default: all on one node)")
      ("no-tables", "the shape-aware model alone (no measured table)")
      ("table", po::value(&tables)->composing(),
       "price with this measured table (protwin.profile) instead of the machine's (repeatable)")
      ("queries", po::value(&queries), "predict every entry of this profile; prints JSON, one object per entry")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_options("protwin kernel --machine M (--gemm M,N,K | --op KIND --elements N | --collective KIND "
                     "--bytes B --ranks R | --queries P.json) [--dtype fp16] [--json]",
                     desc, args, vm))
    return 0;
  require(vm, "machine");
  const int modes = static_cast<int>(vm.count("gemm") + vm.count("op") + vm.count("collective") + vm.count("queries"));
  PROTWIN_CHECK(modes == 1, "kernel: give exactly one of --gemm, --op, --collective, --queries");
  PROTWIN_CHECK(!(vm.count("no-tables") && vm.count("table")), "--no-tables: cannot be combined with --table");

  hw::Machine m = hw::load_machine(machine, set);
  if (vm.count("no-tables")) m.kernel_tables.enabled = false;
  PROTWIN_CHECK(m.gpu.compute.count(dtype), "--dtype: machine ", m.name, " has no ", dtype,
                " compute (it has: ", [&] {
                  std::string s;
                  for (const auto& [k, v] : m.gpu.compute) s += (s.empty() ? "" : ", ") + k;
                  return s;
                }(), ")");
  std::vector<traces::OpProfile> loaded;
  for (const auto& t : tables) loaded.push_back(traces::OpProfile::load(t));
  hw::HardwareCostModel cost(m);
  if (!tables.empty()) {
    PROTWIN_CHECK(hw::has_shape_model(m), "--table: machine ", m.name, " has no shape-aware model (gpu.sms)");
    std::vector<const traces::OpProfile*> ptrs;
    for (const auto& p : loaded) ptrs.push_back(&p);
    cost.set_kernel_tables(ptrs);
  }

  if (vm.count("queries")) {
    const traces::OpProfile q = traces::OpProfile::load(queries);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : q.entries()) {
      const auto& s = e.sig.shape;
      const bool ok = ((e.sig.kind == "gemm" && s.size() == 3) || (e.sig.kind == "bmm" && s.size() == 4) ||
                       (traces::is_collective_kind(e.sig.kind) && s.size() == 3) ||
                       ((traces::is_memory_bound_kind(e.sig.kind) || e.sig.kind.rfind("elementwise.", 0) == 0) &&
                        e.bytes)) &&
                      (traces::is_collective_kind(e.sig.kind) || m.gpu.compute.count(e.sig.dtype));
      if (!ok) continue;
      const Query p = price(cost, e.sig, e.bytes ? *e.bytes : 0);
      nlohmann::json j = {{"key", e.sig.key()}, {"kind", e.sig.kind}, {"shape", e.sig.shape},
                          {"dtype", e.sig.dtype}, {"measured_us", e.us.mean},
                          {"predicted_us", p.time.seconds * 1e6}, {"source", hw::kernel_source_name(p.time.source)},
                          {"flops", p.flops}, {"bytes", p.bytes}};
      for (const auto& [k, v] : e.extra.items()) j[k] = v;
      out.push_back(std::move(j));
    }
    return print_json(out);
  }

  traces::OpSignature sig;
  double work_bytes = 0;
  std::string what;
  if (vm.count("gemm")) {
    const std::vector<int64_t> d = parse_gemm_dims(gemm);
    sig = d.size() == 3 ? traces::OpSignature{"gemm", d, dtype} : traces::OpSignature{"bmm", d, dtype};
    const double b = d.size() == 4 ? static_cast<double>(d[0]) : 1.0;
    const size_t o = d.size() - 3;
    work_bytes = b * traces::dtype_bytes(dtype) *
                 (static_cast<double>(d[o]) * d[o + 2] + static_cast<double>(d[o + 2]) * d[o + 1] +
                  static_cast<double>(d[o]) * d[o + 1]);
    what = sig.kind + " " + gemm;
  } else if (vm.count("op")) {
    static const std::vector<std::string> kOps = {"layernorm", "rmsnorm", "softmax", "gelu", "add", "swiglu", "dropout"};
    PROTWIN_CHECK(std::find(kOps.begin(), kOps.end(), op) != kOps.end(), "--op: expected layernorm, rmsnorm, softmax, "
                  "gelu, add, swiglu or dropout, got \"", op, "\"");
    require(vm, "elements");
    PROTWIN_CHECK(elements >= 1, "--elements: expected an integer >= 1, got ", elements);
    sig = traces::OpSignature{op == "add" ? "elementwise" : op, {elements}, dtype};
    const double passes = op == "add" || op == "swiglu" ? 3 : 2;  // reads + writes over the elements
    work_bytes = passes * static_cast<double>(elements) * traces::dtype_bytes(dtype);
    what = op + " of " + std::to_string(elements) + " elements";
  } else {
    require(vm, "bytes");
    require(vm, "ranks");
    PROTWIN_CHECK(bytes >= 1 && std::isfinite(bytes), "--bytes: expected a number >= 1, got ", bytes);
    PROTWIN_CHECK(ranks >= 2 && ranks <= (1 << 20), "--ranks: expected an integer in [2, 1048576], got ", ranks);
    if (collective == "send_recv") PROTWIN_CHECK(ranks == 2, "--ranks: send_recv is between 2 ranks, got ", ranks);
    const int64_t per_node = vm.count("ranks-per-node") ? ranks_per_node : ranks;
    PROTWIN_CHECK(per_node >= 1 && per_node <= ranks, "--ranks-per-node: expected an integer in [1, ", ranks,
                  "], got ", per_node);
    PROTWIN_CHECK(traces::is_collective_kind(collective), "--collective: expected all_reduce, all_gather, "
                  "reduce_scatter, broadcast or send_recv, got \"", collective, "\"");
    sig = traces::OpSignature{collective, {static_cast<int64_t>(std::llround(bytes)), ranks, per_node}, "int8"};
    work_bytes = bytes;
    what = collective + " of " + std::to_string(static_cast<int64_t>(bytes)) + " B over " + std::to_string(ranks) +
           " ranks (" + std::to_string(per_node) + " per node)";
  }
  const Query p = price(cost, sig, work_bytes);
  const double s = p.time.seconds;
  const std::string source = hw::kernel_source_name(p.time.source);
  if (vm.count("json")) {
    nlohmann::json j = {{"machine", m.name}, {"kernel", sig.key()}, {"seconds", s}, {"source", source}};
    if (p.flops > 0) j["tflops"] = p.flops / s * 1e-12;
    if (vm.count("op")) j["GBps"] = work_bytes / s * 1e-9;
    if (vm.count("collective")) j["algbw_GBps"] = work_bytes / s * 1e-9;
    return print_json(j);
  }
  std::printf("%s on %s (%s): %.3f us", what.c_str(), m.name.c_str(), m.gpu.name.c_str(), s * 1e6);
  if (p.flops > 0) std::printf(", %.1f TFLOPS", p.flops / s * 1e-12);
  if (vm.count("op")) std::printf(", %.1f GB/s", work_bytes / s * 1e-9);
  if (vm.count("collective")) std::printf(", algbw %.2f GB/s", work_bytes / s * 1e-9);
  std::printf("\nsource: %s\n", source.c_str());
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("kernel", "one GPU kernel's predicted time (GEMM, memory-bound op, collective) and its source",
                   protwin::cli::run_kernel)
