#include "traces/block_signature.h"

#include <algorithm>

#include "traces/model_spec.h"

namespace protwin::traces {

namespace {

constexpr const char* kPrefix = "block_";

int64_t int_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

// The plan's meta.model_spec through the ModelSpec codec, parsed again only when it differs from
// the last one this thread read: a cost model with a profile asks for every compute op of a plan,
// and a search prices thousands of them (comparing the JSON costs a tenth of parsing it).
const ModelSpec& model_spec_of(const Plan& plan) {
  thread_local nlohmann::json last;
  thread_local ModelSpec spec;
  const nlohmann::json& j = plan.meta["model_spec"];
  if (j != last) {
    spec = model_from_json(j, plan.source, "/meta/model_spec");
    last = j;
  }
  return spec;
}

}  // namespace

OpSignature block_signature(const BlockShape& b, const std::string& dtype) {
  return {kPrefix + b.pass + "." + b.role + "." + b.family,
          {b.batch, b.seq, b.hidden, b.heads, b.kv_heads, b.ffn_hidden, b.vocab},
          dtype};
}

std::optional<OpSignature> block_signature(const Plan& plan, const Op& op) {
  if (op.kind != OpKind::kForward && op.kind != OpKind::kRecompute && op.kind != OpKind::kBackward) return std::nullopt;
  BlockShape b;
  const auto block = op.attrs.is_object() ? op.attrs.find("block") : op.attrs.end();
  const std::string name = block != op.attrs.end() && block->is_string() ? block->get<std::string>() : "";
  if (name == "embedding" || name == "head") b.role = name;
  else if (name.rfind("layer.", 0) == 0) b.role = "layer";
  else return std::nullopt;
  b.batch = int_of(plan.meta, "batch");
  b.seq = int_of(plan.meta, "seq");
  if (b.batch <= 0 || b.seq <= 0 || !plan.meta.contains("model_spec")) return std::nullopt;
  const ModelSpec& spec = model_spec_of(plan);
  if (spec.family != "gpt2" && spec.family != "llama") return std::nullopt;
  b.family = spec.family;
  b.pass = op.kind == OpKind::kBackward ? "backward" : "forward";
  b.hidden = spec.hidden;
  b.heads = spec.heads;
  b.kv_heads = spec.kv_heads;
  b.ffn_hidden = spec.ffn_hidden;
  b.vocab = spec.vocab;
  return block_signature(b, plan.dtype.empty() ? "fp32" : plan.dtype);
}

std::optional<BlockShape> block_shape_of(const OpSignature& sig) {
  if (sig.kind.rfind(kPrefix, 0) != 0 || sig.shape.size() != 7) return std::nullopt;
  BlockShape b;
  const std::string rest = sig.kind.substr(std::char_traits<char>::length(kPrefix));
  const size_t d1 = rest.find('.'), d2 = d1 == std::string::npos ? d1 : rest.find('.', d1 + 1);
  if (d2 == std::string::npos) return std::nullopt;
  b.pass = rest.substr(0, d1);
  b.role = rest.substr(d1 + 1, d2 - d1 - 1);
  b.family = rest.substr(d2 + 1);
  if ((b.pass != "forward" && b.pass != "backward") || (b.role != "embedding" && b.role != "layer" && b.role != "head") ||
      (b.family != "gpt2" && b.family != "llama"))
    return std::nullopt;
  const auto& s = sig.shape;
  for (int64_t v : s)
    if (v <= 0) return std::nullopt;
  b.batch = s[0];
  b.seq = s[1];
  b.hidden = s[2];
  b.heads = s[3];
  b.kv_heads = s[4];
  b.ffn_hidden = s[5];
  b.vocab = s[6];
  return b;
}

OpProfile without_blocks(const OpProfile& p) {
  OpProfile out;
  out.set_device(p.device());
  out.set_provenance(p.provenance());
  for (const OpProfileEntry& e : p.entries())
    if (!block_shape_of(e.sig)) out.add(e);
  return out;
}

OpProfile with_block_times(const OpProfile& p, const std::function<std::optional<double>(const OpProfileEntry&)>& us) {
  OpProfile out;
  out.set_device(p.device());
  out.set_provenance(p.provenance());
  for (OpProfileEntry e : p.entries()) {
    if (block_shape_of(e.sig))
      if (const std::optional<double> t = us(e)) {
        e.us = OpTimeStats{};
        e.us.add(*t);
      }
    out.add(std::move(e));
  }
  return out;
}

OpProfile with_block_medians(const OpProfile& pooled, const std::vector<OpProfile>& rounds) {
  return with_block_times(pooled, [&](const OpProfileEntry& e) -> std::optional<double> {
    std::vector<double> v;
    for (const OpProfile& r : rounds)
      if (const OpProfileEntry* x = r.find(e.sig)) v.push_back(x->us.mean);
    if (v.empty()) return std::nullopt;
    return median(std::move(v));
  });
}

}  // namespace protwin::traces
