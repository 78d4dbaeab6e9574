// Model zoo and spec resolution. Oracles: published parameter counts and closed forms.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <fstream>

#include "sim/workload/model_spec.h"
#include "traces/error.h"

using protwin::sim::ModelSpec;
using protwin::sim::find_model;
using protwin::sim::model_names;
using protwin::sim::resolve_model;

namespace {

std::string write_spec(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(PROTWIN_BINARY_DIR) / "tests" / "sim_workload_tmp";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const protwin::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// GPT-2 / OPT closed form: V*h + P*h (learned positions) + L*(12h^2 + 13h) + 2h (final norm);
// per layer 4h^2+4h attention, 8h^2+5h MLP (f = 4h), 4h for two LayerNorms.
int64_t gpt_closed_form(const ModelSpec& m) {
  const int64_t h = m.hidden;
  return m.vocab * h + m.position_rows() * h + m.layers * (12 * h * h + 13 * h) + 2 * h;
}

// Fujii et al. (arXiv 2411.06465, REFERENCE §3): P = 2Lh^2[(1 + k/a) + (f/h)*1.5 + 1/h] + h + 2hV,
// written in integers: 2Lh^2 + 2Lh*kv + 3Lhf + 2Lh + h + 2hV.
int64_t llama_closed_form(const ModelSpec& m) {
  const int64_t h = m.hidden, L = m.layers, kv = m.kv_dim(), f = m.ffn_hidden;
  return 2 * L * h * h + 2 * L * h * kv + 3 * L * h * f + 2 * L * h + h + 2 * h * m.vocab;
}

}  // namespace

TEST_CASE("published parameter counts", "[workload][zoo]") {
  // HF gpt2; Colossal-AI GPT-2 10B (REFERENCE §4); Fujii et al.'s check value; HF configs.
  CHECK(find_model("gpt2-small").parameter_count() == 124439808);
  CHECK(find_model("gpt2-10b").parameter_count() == 10279047168);
  CHECK(find_model("llama3.1-8b").parameter_count() == 8030261248);
  CHECK(find_model("llama3.1-70b").parameter_count() == 70553706496);
  // Meta's model card (405B) and HF meta-llama/Llama-3.1-405B: 405,853,388,800 parameters.
  CHECK(find_model("llama3.1-405b").parameter_count() == 405853388800);
  CHECK(find_model("mistral-7b").parameter_count() == 7241732096);
  CHECK(find_model("llama-13b").parameter_count() == 13015864320);
  // HF gpt2-medium (355M), built inline.
  CHECK(resolve_model("gpt:hidden=1024,layers=24,heads=16,vocab=50257").parameter_count() == 354823168);
}

TEST_CASE("every zoo model matches its family's closed-form parameter count", "[workload][zoo]") {
  for (const auto& name : model_names()) {
    const ModelSpec m = find_model(name);
    INFO(name);
    if (m.family == "llama") CHECK(m.parameter_count() == llama_closed_form(m));
    else CHECK(m.parameter_count() == gpt_closed_form(m));
    CHECK(m.hidden % m.heads == 0);
    CHECK(m.heads % m.kv_heads == 0);
    CHECK_FALSE(m.citation.empty());
    CHECK(m.source == "zoo");
  }
}

TEST_CASE("the zoo holds the models of the brief", "[workload][zoo]") {
  const std::vector<std::string> want = {"gpt2-tiny", "gpt2-small", "gpt2-1b",  "gpt2-10b",
                                         "gpt2-15b",  "gpt2-20b",   "gpt3-175b", "opt-13b",
                                         "opt-30b",   "llama-tiny", "mistral-7b", "llama3.1-8b",
                                         "llama-13b", "llama-34b",  "llama3.1-70b", "llama3.1-405b"};
  // Listed by family, then by size.
  CHECK(model_names() == want);
  // Runtime-sized models: a few million parameters.
  CHECK(find_model("gpt2-tiny").parameter_count() < 5000000);
  CHECK(find_model("llama-tiny").parameter_count() < 5000000);
  // OPT: 2048 learned positions + HF's offset of 2 = 2050 rows; tied head.
  CHECK(find_model("opt-13b").position_rows() == 2050);
  CHECK(find_model("opt-13b").tied_embeddings);
  CHECK_FALSE(find_model("llama3.1-8b").tied_embeddings);
}

TEST_CASE("parameter layout is in execution order with the tied head last", "[workload][zoo]") {
  const auto layout = protwin::sim::parameter_layout(find_model("gpt2-small"));
  REQUIRE(layout.size() == 14);
  CHECK(layout[0].block == "embedding");
  CHECK(layout[0].tensors[0].name == "embed.tokens.weight");
  CHECK(layout[0].tensors[0].shape == std::vector<int64_t>{50257, 768});
  CHECK(layout[1].tensors[0].name == "layers.0.norm_1.weight");
  CHECK(layout[1].tensors[2].name == "layers.0.attn.qkv.weight");
  CHECK(layout[1].tensors[2].shape == std::vector<int64_t>{3 * 768, 768});
  CHECK(layout[1].count() == 12 * 768 * 768 + 13 * 768);
  const auto& head = layout.back();
  CHECK(head.block == "head");
  CHECK(head.tensors.back().name == "lm_head.weight");
  CHECK(head.tensors.back().tied_to == "embed.tokens.weight");
  CHECK(head.count() == 2 * 768);  // final LayerNorm only

  const auto llama = protwin::sim::parameter_layout(find_model("llama3.1-8b"));
  CHECK(llama[1].tensors[2].name == "layers.0.attn.k.weight");
  CHECK(llama[1].tensors[2].shape == std::vector<int64_t>{1024, 4096});  // 8 KV heads x 128
  CHECK(llama.back().tensors.back().tied_to.empty());
  CHECK(llama.back().count() == 4096 + 128256LL * 4096);
}

TEST_CASE("stored parameters: the layout without the tied head, each with its block", "[workload][zoo]") {
  // The runtime's weights, chunk store and checkpoints use this list; the chunk packer the layout.
  for (const std::string& name : model_names()) {
    INFO(name);
    const ModelSpec m = find_model(name);
    const auto layout = protwin::sim::parameter_layout(m);
    const auto stored = protwin::traces::stored_parameters(m);
    size_t i = 0;
    int64_t total = 0;
    for (size_t b = 0; b < layout.size(); ++b)
      for (const auto& t : layout[b].tensors) {
        CHECK(t.block == static_cast<int64_t>(b));
        if (!t.tied_to.empty()) continue;
        REQUIRE(i < stored.size());
        CHECK(stored[i].name == t.name);
        CHECK(stored[i].shape == t.shape);
        total += stored[i++].numel;
      }
    CHECK(i == stored.size());
    CHECK(total == m.parameter_count());
  }
  // GPT-2 small: 124,439,808 parameters (REFERENCE.md §4) with the tied head stored once.
  const auto gpt2 = protwin::traces::stored_parameters(find_model("gpt2-small"));
  CHECK(gpt2.back().name == "final_norm.bias");
  int64_t n = 0;
  for (const auto& t : gpt2) n += t.numel;
  CHECK(n == 124439808);
}

TEST_CASE("a spec inside another document is read with its pointer in every error", "[workload][zoo][errors]") {
  nlohmann::json plan = {{"meta", {{"model_spec", protwin::sim::model_to_json(find_model("gpt2-tiny"))}}}};
  const ModelSpec m = protwin::sim::model_from_json(plan["meta"]["model_spec"], "p.json", "/meta/model_spec");
  CHECK(m.parameter_count() == find_model("gpt2-tiny").parameter_count());
  CHECK(m.source == "p.json");
  plan["meta"]["model_spec"]["heads"] = 3;
  CHECK(error_of([&] { protwin::sim::model_from_json(plan["meta"]["model_spec"], "p.json", "/meta/model_spec"); }) ==
        "p.json:/meta/model_spec/heads: hidden 256 is not divisible by heads 3");
}

TEST_CASE("resolve_model reads spec files and round-trips model_to_json", "[workload][zoo]") {
  const ModelSpec m = find_model("mistral-7b");
  const std::string path = write_spec("mistral_copy.json", protwin::sim::model_to_json(m).dump());
  const ModelSpec r = resolve_model(path);
  CHECK(r.parameter_count() == m.parameter_count());
  CHECK(r.name == "mistral-7b");
  CHECK(r.source == path);

  // Family defaults fill what a spec leaves out (LLaMA: SwiGLU 256*ceil(8h/3/256), untied).
  const ModelSpec d = resolve_model(write_spec("small_llama.json", R"({"family":"llama","hidden":4096,"layers":2,"heads":32})"));
  CHECK(d.name == "small_llama");
  CHECK(d.ffn_hidden == 11008);  // LLaMA-7B's intermediate size
  CHECK(d.kv_heads == 32);
  CHECK(d.norm == "rmsnorm");
  CHECK_FALSE(d.tied_embeddings);
}

TEST_CASE("unknown model names list the known ones", "[workload][zoo][errors]") {
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  CHECK(error_of([] { find_model("gpt5"); }) == "unknown model 'gpt5'; known models: " + known);
  CHECK(error_of([] { resolve_model("gpt5"); })
            .rfind("unknown model 'gpt5'; known models: " + known + "\nhint:", 0) == 0);
}

TEST_CASE("bad spec files name the file, the JSON pointer and the expectation", "[workload][zoo][errors]") {
  const std::string missing = write_spec("missing.json", R"({"family":"gpt2","hidden":768,"heads":12})");
  CHECK(error_of([&] { resolve_model(missing); }) == missing + ":/: missing required field \"layers\"");

  const std::string negative = write_spec("negative.json", R"({"family":"gpt2","hidden":768,"layers":-3,"heads":12})");
  CHECK(error_of([&] { resolve_model(negative); }) == negative + ":/layers: expected an integer > 0 and <= 65536, got integer -3");

  const std::string str = write_spec("string.json", R"({"family":"gpt2","hidden":"a","layers":2,"heads":12})");
  CHECK(error_of([&] { resolve_model(str); }) == str + ":/hidden: expected an integer > 0 and <= 1048576, got string \"a\"");

  // Sizes whose byte and FLOP counts would overflow are refused, not wrapped.
  const std::string huge = write_spec("huge.json", R"({"family":"gpt2","hidden":4194304,"layers":2,"heads":16})");
  CHECK(error_of([&] { resolve_model(huge); }) == huge + ":/hidden: expected an integer > 0 and <= 1048576, got integer 4194304");
  const std::string deep = write_spec("deep.json", R"({"family":"gpt2","hidden":64,"layers":100000000,"heads":4})");
  CHECK(error_of([&] { resolve_model(deep); }) == deep + ":/layers: expected an integer > 0 and <= 65536, got integer 100000000");

  const std::string indiv = write_spec("indivisible.json", R"({"family":"gpt2","hidden":1000,"layers":2,"heads":16})");
  CHECK(error_of([&] { resolve_model(indiv); }) == indiv + ":/heads: hidden 1000 is not divisible by heads 16");

  const std::string gqa = write_spec("gqa.json", R"({"family":"llama","hidden":4096,"layers":2,"heads":32,"kv_heads":5})");
  CHECK(error_of([&] { resolve_model(gqa); }) == gqa + ":/kv_heads: heads 32 is not divisible by kv_heads 5");

  const std::string fam = write_spec("family.json", R"({"family":"bert","hidden":768,"layers":2,"heads":12})");
  CHECK(error_of([&] { resolve_model(fam); }) == fam + ":/family: expected one of gpt, gpt2, opt, llama, got \"bert\"");

  const std::string extra = write_spec("extra.json", R"({"family":"gpt2","hidden":768,"layers":2,"heads":12,"hiden":3})");
  CHECK(error_of([&] { resolve_model(extra); }).rfind(extra + ":/hiden: unknown field \"hiden\"; known fields: name, family, hidden", 0) == 0);
}

TEST_CASE("inline specs", "[workload][zoo][errors]") {
  const ModelSpec m = resolve_model("llama:hidden=256,layers=2,heads=4,kv_heads=2,vocab=256");
  CHECK(m.family == "llama");
  CHECK(m.source == "inline");
  CHECK(m.kv_heads == 2);
  CHECK(resolve_model("opt:hidden=512,layers=2,heads=8").position_rows() == 2050);

  CHECK(error_of([] { resolve_model("gpt:hidden=1024,layers=24,heads=16,hiden=3"); })
            .rfind("inline spec 'gpt:hidden=1024,layers=24,heads=16,hiden=3': unknown key 'hiden'; known keys: name, family, hidden", 0) == 0);
  CHECK(error_of([] { resolve_model("gpt:hidden=x,layers=24,heads=16"); }) ==
        "inline spec 'gpt:hidden=x,layers=24,heads=16':/hidden: expected an integer > 0 and <= 1048576, got string \"x\"");
  CHECK(error_of([] { resolve_model("bert:hidden=1024"); }) ==
        "inline spec 'bert:hidden=1024': unknown family 'bert'; expected gpt, gpt2, opt or llama");
}
