// protwin import-table: public measured kernel tables (vidur, NeuSight, LLMCompass, nccl-tests)
// to an op profile (traces/table_import.h).
#include <cstdio>
#include <map>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "traces/error.h"
#include "traces/table_import.h"

namespace protwin::cli {
namespace {

int run_import_table(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::vector<std::string> files;
  std::string out_path;
  traces::TableImportOptions opts;
  desc.add_options()
      ("format", po::value(&opts.format), "vidur | neusight | llmcompass | nccl-tests")
      ("file", po::value(&files)->multitoken(), "input tables (.csv or .csv.gz), also positional")
      ("output,o", po::value(&out_path), "write the profile (protwin.profile JSON) here")
      ("source", po::value(&opts.source), "provenance source, e.g. microsoft/vidur@7d47513 (default: the project)")
      ("device", po::value(&opts.device), "GPU name for the profile; neusight: keep only this GPU's rows")
      ("ranks", po::value(&opts.ranks)->default_value(0), "nccl-tests: ranks (default: from the file name)")
      ("per-octave", po::value(&opts.per_octave)->default_value(0),
       "thin each series (token counts, message sizes) to at most this many sizes per octave (0: all)")
      ("json", "print the summary as JSON");
  po::variables_map vm;
  if (!parse_options("protwin import-table --format vidur|neusight|llmcompass|nccl-tests FILE... -o profile.json",
                     desc, args, vm, po::positional_options_description().add("file", -1)))
    return 0;
  require(vm, "format");
  require(vm, "output");
  PROTWIN_CHECK(!files.empty(), "import-table: expected at least one FILE");
  const traces::OpProfile profile = traces::import_table(files, opts);
  profile.save(out_path, traces::OpProfile::kOneOpPerLine);

  std::map<std::string, int> kinds;
  for (const auto& e : profile.entries()) ++kinds[e.sig.kind + ":" + e.sig.dtype];
  if (vm.count("json"))
    return print_json({{"output", out_path}, {"format", opts.format}, {"entries", profile.size()}, {"kinds", kinds}});
  std::printf("%s: %zu entries from %zu file(s) (%s)\n", out_path.c_str(), profile.size(), files.size(),
              opts.format.c_str());
  for (const auto& [k, n] : kinds) std::printf("  %-24s %6d\n", k.c_str(), n);
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("import-table", "public measured kernel tables (vidur, NeuSight, LLMCompass, nccl-tests) to an op profile",
                   protwin::cli::run_import_table)
