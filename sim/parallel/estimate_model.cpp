#include "sim/parallel/estimate_model.h"

namespace protwin::sim {

EstimateModel to_estimate_model(const ModelSpec& s) {
  EstimateModel m;
  m.name = s.name;
  m.hidden = s.hidden;
  m.ffn_hidden = s.ffn_hidden;
  m.layers = s.layers;
  m.heads = s.heads;
  m.kv_heads = s.kv_heads;
  m.vocab = s.vocab;
  m.kv_channels = s.heads > 0 ? s.head_dim() : 0;
  m.untied_embeddings = !s.tied_embeddings;
  m.swiglu = s.activation == "swiglu";
  m.rmsnorm = s.norm == "rmsnorm";
  return m;
}

}  // namespace protwin::sim
