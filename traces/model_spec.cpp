// Reading, validating and writing ModelSpecs.
#include "traces/model_spec.h"

#include <algorithm>
#include <memory>

#include "traces/error.h"
#include "traces/json_reader.h"

namespace protwin::traces {

namespace {

using protwin::detail::join;

// Dimensions beyond these (a thousand times today's largest models) would overflow the byte and
// FLOP counts built from them; they are refused, naming the field.
constexpr int64_t kMaxDim = int64_t{1} << 20;     // hidden, ffn_hidden, heads, kv_heads
constexpr int64_t kMaxLayers = int64_t{1} << 16;
constexpr int64_t kMaxTokens = int64_t{1} << 24;  // vocab, max_positions, default_seq

int64_t int_field(const JsonNode& root, const std::string& key, int64_t fallback, int64_t min,
                  int64_t max = kMaxDim) {
  auto n = root.find(key);
  if (!n) return fallback;
  const auto& v = n->raw();
  const std::string want = (min > 0 ? "expected an integer > 0" : "expected an integer >= 0") +
                           std::string(" and <= ") + std::to_string(max);
  if (v.is_number() && v.get<double>() > static_cast<double>(max)) n->fail(want + ", got " + describe_json(v));
  if (!v.is_number_integer()) {
    // 4096.0 is fine, 4096.5 is not.
    if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())) &&
        v.get<double>() >= static_cast<double>(min))
      return static_cast<int64_t>(v.get<double>());
    n->fail(want + ", got " + describe_json(v));
  }
  const int64_t x = v.get<int64_t>();
  if (x < min) n->fail(want + ", got " + describe_json(v));
  return x;
}

std::string choice_field(const JsonNode& root, const std::string& key, const std::string& fallback,
                         const std::vector<std::string>& allowed) {
  auto n = root.find(key);
  if (!n) return fallback;
  const std::string s = n->as_string();
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end())
    n->fail("expected one of " + join(allowed) + ", got \"" + s + "\"");
  return s;
}

// Meta's LLaMA reference code: hidden_dim = 256 * ceil((2/3 * 4h) / 256).
int64_t llama_default_ffn(int64_t h) { return 256 * ((8 * h / 3 + 255) / 256); }

std::string canonical_family(const std::string& f) { return f == "gpt" ? "gpt2" : f; }

}  // namespace

bool is_family(const std::string& f) {
  const std::string c = canonical_family(f);
  return c == "gpt2" || c == "opt" || c == "llama";
}

const std::vector<std::string>& model_fields() {
  static const std::vector<std::string> fields = {
      "name",          "family",       "hidden",  "layers",         "heads", "kv_heads",
      "ffn_hidden",    "vocab",        "max_positions", "position_offset", "tied_embeddings",
      "bias",          "norm",         "activation",    "default_seq",     "source"};
  return fields;
}

ModelSpec model_from_json(const nlohmann::json& j, const std::string& file, const std::string& pointer) {
  JsonNode root(&j, std::make_shared<const std::string>(file), pointer);
  if (!root.is_object()) root.fail("expected a model spec object, got " + describe_json(j));
  const std::vector<std::string>& fields = model_fields();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(fields.begin(), fields.end(), it.key()) == fields.end())
      root.at(it.key()).fail("unknown field \"" + it.key() + "\"; known fields: " + join(fields));
  }

  ModelSpec m;
  m.source = file;
  const JsonNode fam = root.at("family");
  m.family = canonical_family(fam.as_string());
  if (!is_family(m.family))
    fam.fail("expected one of gpt, gpt2, opt, llama, got \"" + fam.as_string() + "\"");
  const bool gpt = m.family == "gpt2", opt = m.family == "opt", llama = m.family == "llama";

  m.name = root.get_string("name", "custom-" + m.family);
  for (const char* key : {"hidden", "layers", "heads"}) root.at(key);  // "missing required field"
  m.hidden = int_field(root, "hidden", 0, 1);
  m.layers = int_field(root, "layers", 0, 1, kMaxLayers);
  m.heads = int_field(root, "heads", 0, 1);
  m.kv_heads = int_field(root, "kv_heads", m.heads, 1);
  // Family defaults: GPT-2 vocab 50257, OPT 50272 (HF configs), LLaMA-1/2 and Mistral 32000.
  m.vocab = int_field(root, "vocab", gpt ? 50257 : opt ? 50272 : 32000, 1, kMaxTokens);
  m.ffn_hidden = int_field(root, "ffn_hidden", llama ? llama_default_ffn(m.hidden) : 4 * m.hidden, 1);
  // GPT-2 and OPT learn their positions: 0 rows would silently make them RoPE models (0 = RoPE).
  m.max_positions = int_field(root, "max_positions", gpt ? 1024 : opt ? 2048 : 0, gpt || opt ? 1 : 0, kMaxTokens);
  m.position_offset = int_field(root, "position_offset", opt ? 2 : 0, 0, kMaxTokens);
  m.tied_embeddings = root.get_bool("tied_embeddings", !llama);
  m.bias = root.get_bool("bias", !llama);
  m.norm = choice_field(root, "norm", llama ? "rmsnorm" : "layernorm", {"layernorm", "rmsnorm"});
  m.activation =
      choice_field(root, "activation", llama ? "swiglu" : opt ? "relu" : "gelu", {"gelu", "relu", "swiglu"});
  m.default_seq = int_field(root, "default_seq", m.max_positions > 0 ? m.max_positions : 2048, 1, kMaxTokens);
  m.citation = root.get_string("source", "");

  if (m.hidden % m.heads != 0)
    root.at("heads").fail("hidden " + std::to_string(m.hidden) + " is not divisible by heads " +
                          std::to_string(m.heads));
  if (m.heads % m.kv_heads != 0)
    root.at("kv_heads").fail("heads " + std::to_string(m.heads) + " is not divisible by kv_heads " +
                             std::to_string(m.kv_heads));
  if (m.max_positions > 0 && m.default_seq > m.max_positions)
    root.at("default_seq").fail("default_seq " + std::to_string(m.default_seq) +
                                " exceeds max_positions " + std::to_string(m.max_positions));
  return m;
}

nlohmann::json model_to_json(const ModelSpec& m) {
  nlohmann::json j = nlohmann::json::object();
  j["name"] = m.name;
  j["family"] = m.family;
  j["hidden"] = m.hidden;
  j["layers"] = m.layers;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["ffn_hidden"] = m.ffn_hidden;
  j["vocab"] = m.vocab;
  j["max_positions"] = m.max_positions;
  j["position_offset"] = m.position_offset;
  j["tied_embeddings"] = m.tied_embeddings;
  j["bias"] = m.bias;
  j["norm"] = m.norm;
  j["activation"] = m.activation;
  j["default_seq"] = m.default_seq;
  j["source"] = m.citation;
  return j;
}

}  // namespace protwin::traces
