#include "runtime/model/runtime_model.h"

#include <nlohmann/json.hpp>

#include "traces/error.h"

namespace protwin::rt {

namespace {

// Refuses a spec field whose value the runtime's model does not implement.
template <typename T>
void expect(const T& got, const T& want, const std::string& where, const char* key, const char* family) {
  PROTWIN_CHECK(got == want, where, "/", key, ": the runtime's ", family, " needs ", nlohmann::json(want).dump(),
                ", got ", nlohmann::json(got).dump());
}

}  // namespace

void check_runtime_model(const ModelSpec& m, int64_t seq, const std::string& file, const std::string& pointer) {
  const std::string where = file + ":" + pointer;
  if (is_gpt2(m)) {
    expect(m.norm, std::string("layernorm"), where, "norm", "GPT-2");
    expect(m.activation, std::string("gelu"), where, "activation", "GPT-2");
    expect(m.bias, true, where, "bias", "GPT-2");
    expect(m.tied_embeddings, true, where, "tied_embeddings", "GPT-2");
    expect(m.position_offset, int64_t{0}, where, "position_offset", "GPT-2");
    PROTWIN_CHECK(m.kv_heads == m.heads, where, "/kv_heads: the runtime's GPT-2 needs kv_heads == heads (",
                  m.heads, "), got ", m.kv_heads);
    PROTWIN_CHECK(seq <= m.max_positions, where, "/max_positions: ", m.max_positions,
                  " learned positions, but the plan's sequence is ", seq);
  } else if (m.family == "llama") {
    expect(m.norm, std::string("rmsnorm"), where, "norm", "LLaMA");
    expect(m.activation, std::string("swiglu"), where, "activation", "LLaMA");
    expect(m.bias, false, where, "bias", "LLaMA");
    expect(m.tied_embeddings, false, where, "tied_embeddings", "LLaMA");
    expect(m.max_positions, int64_t{0}, where, "max_positions", "LLaMA (RoPE, no learned positions)");
    PROTWIN_CHECK(m.head_dim() % 2 == 0, where, "/heads: RoPE needs an even head dimension (hidden ", m.hidden,
                  " / heads ", m.heads, ")");
  } else {
    PROTWIN_CHECK(false, where, "/family: the runtime implements gpt2 and llama, got \"", m.family, "\"");
  }
}

}  // namespace protwin::rt
