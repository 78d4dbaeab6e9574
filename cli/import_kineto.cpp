// protwin import-kineto: turn a PyTorch profiler (Kineto) trace into an op profile.
#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "traces/error.h"
#include "traces/json_reader.h"
#include "traces/file_io.h"
#include "traces/host_dispatch_import.h"
#include "traces/kineto_import.h"
#include "traces/op_profile.h"

namespace protwin::cli {
namespace {

struct CopyTotals {
  int64_t count = 0;
  double bytes = 0, us = 0;
  double largest_bytes = 0, largest_mean_us = 0;
};

bool is_copy_kind(const std::string& k) {
  return k.rfind("h2d", 0) == 0 || k.rfind("d2h", 0) == 0 || k == "d2d" || k == "p2p" ||
         k == "h2h" || k.rfind("memcpy:", 0) == 0;
}

std::string clip(const std::string& s, size_t n) {
  return s.size() <= n ? s : traces::utf8_prefix(s, n - 3) + "...";
}

int run_import_kineto(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string trace_path, out_path, source, host_out;
  int top = 15;
  desc.add_options()
      ("trace", po::value(&trace_path), "Kineto trace (.json or .json.gz), also the first positional argument")
      ("output,o", po::value(&out_path), "write the profile (protwin.profile JSON) here")
      ("top", po::value(&top)->default_value(15), "how many ops to list, by total time")
      ("no-cpu-ops", "leave out host-side ATen ops (cat cpu_op)")
      ("source", po::value(&source), "provenance source to record (default: the trace's file name)")
      ("host-dispatch", po::value(&host_out),
       "also write the trace's host-dispatch costs (launch, copy call, eager op with and without autograd, "
       "backward node, collective call) as a machine fragment for `protwin machine merge`")
      ("json", "print the summary as JSON");
  po::variables_map vm;
  if (!parse_options("protwin import-kineto TRACE.json[.gz] -o profile.json [--json]", desc, args, vm,
                     po::positional_options_description().add("trace", 1)))
    return 0;
  require(vm, "trace");
  require(vm, "output");
  PROTWIN_CHECK(top >= 0, "--top: expected an integer >= 0, got ", top);

  traces::KinetoImportOptions opts;
  opts.cpu_ops = !vm.count("no-cpu-ops");
  opts.source = source;
  const traces::JsonDocument doc = traces::JsonDocument::parse(traces::read_file_maybe_gzip(trace_path), trace_path);
  const std::string file_name = trace_path.substr(trace_path.find_last_of('/') + 1);
  const traces::OpProfile profile = traces::import_kineto(doc.root(), file_name, opts);
  profile.save(out_path);
  std::map<std::string, traces::HostCostSample> host;
  if (!host_out.empty()) {
    host = traces::host_dispatch_costs(doc.root());
    PROTWIN_CHECK(!host.empty(), trace_path, ": no host events to derive host-dispatch costs from (cuda_runtime "
                  "cudaLaunchKernel or cudaMemcpyAsync, cpu_op)");
    traces::write_file_atomic(host_out, traces::host_dispatch_fragment(host, source.empty() ? file_name : source).dump(2) + "\n");
  }

  // Top ops by total time.
  std::vector<const traces::OpProfileEntry*> sorted;
  for (const auto& e : profile.entries()) sorted.push_back(&e);
  auto total = [](const traces::OpProfileEntry* e) { return e->us.mean * static_cast<double>(e->us.count); };
  std::sort(sorted.begin(), sorted.end(), [&](auto* a, auto* b) {
    return total(a) != total(b) ? total(a) > total(b) : a->sig.key() < b->sig.key();
  });
  if (sorted.size() > static_cast<size_t>(top)) sorted.resize(static_cast<size_t>(top));

  // Copies: aggregate bandwidth per kind and the bandwidth of the largest copy.
  std::map<std::string, CopyTotals> copies;
  for (const auto& e : profile.entries()) {
    if (!is_copy_kind(e.sig.kind) || !e.bytes) continue;
    CopyTotals& c = copies[e.sig.kind];
    c.count += e.us.count;
    c.bytes += *e.bytes * static_cast<double>(e.us.count);
    c.us += total(&e);
    if (*e.bytes > c.largest_bytes) {
      c.largest_bytes = *e.bytes;
      c.largest_mean_us = e.us.mean;
    }
  }
  // bytes / µs / 1e3 = GB/s
  auto gbps = [](double bytes, double us) { return us > 0 ? bytes / us / 1e3 : 0.0; };

  if (vm.count("json")) {
    nlohmann::json j = {{"trace", trace_path}, {"output", out_path}, {"device", profile.device()},
                        {"entries", profile.size()}};
    j["top"] = nlohmann::json::array();
    for (const auto* e : sorted)
      j["top"].push_back({{"key", e->sig.key()}, {"count", e->us.count}, {"total_us", total(e)},
                          {"mean_us", e->us.mean}, {"min_us", e->us.min}, {"max_us", e->us.max}});
    j["copies"] = nlohmann::json::array();
    for (const auto& [kind, c] : copies)
      j["copies"].push_back({{"kind", kind}, {"count", c.count}, {"bytes", c.bytes}, {"total_us", c.us},
                             {"aggregate_GBps", gbps(c.bytes, c.us)},
                             {"largest_bytes", c.largest_bytes},
                             {"largest_GBps", gbps(c.largest_bytes, c.largest_mean_us)}});
    for (const auto& [key, s] : host) j["host_dispatch"][key] = {{"median_us", s.median_us}, {"count", s.count}};
    return print_json(j);
  }

  std::printf("device:  %s\nentries: %zu\nprofile: %s\n\n", profile.device().c_str(), profile.size(),
              out_path.c_str());
  std::printf("top %zu ops by total time\n", sorted.size());
  std::printf("  %-64s %7s %11s %10s %10s %10s\n", "op", "count", "total_ms", "mean_us", "min_us", "max_us");
  for (const auto* e : sorted)
    std::printf("  %-64s %7lld %11.3f %10.2f %10.2f %10.2f\n", clip(e->sig.key(), 64).c_str(),
                static_cast<long long>(e->us.count), total(e) / 1e3, e->us.mean, e->us.min, e->us.max);
  if (!host.empty()) {
    std::printf("\nhost dispatch (%s)\n", host_out.c_str());
    for (const auto& [key, s] : host)
      std::printf("  %-22s %9.2f us  (median of %lld)\n", key.c_str(), s.median_us, static_cast<long long>(s.count));
  }
  if (!copies.empty()) {
    std::printf("\ncopies\n");
    std::printf("  %-14s %7s %12s %11s %10s %14s %12s\n", "kind", "count", "MB", "total_ms", "GB/s",
                "largest_MB", "largest_GB/s");
    for (const auto& [kind, c] : copies)
      std::printf("  %-14s %7lld %12.3f %11.3f %10.2f %14.3f %12.2f\n", kind.c_str(),
                  static_cast<long long>(c.count), c.bytes / 1e6, c.us / 1e3, gbps(c.bytes, c.us),
                  c.largest_bytes / 1e6, gbps(c.largest_bytes, c.largest_mean_us));
  }
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("import-kineto", "turn a PyTorch profiler (Kineto) trace into an op profile",
                   protwin::cli::run_import_kineto)
