// Decoder layers per pipeline stage.
//
// Even (Fujii et al.; Megatron-LM's default): L / PP layers on every stage.
// Uneven, as Megatron-LM's --decoder-first-pipeline-num-layers and
// --decoder-last-pipeline-num-layers: the first and/or last stage get the layers given, the other
// stages split the rest evenly. Llama 3 405B (Dubey et al. 2024, §3.3.2) trained 126 layers at
// PP 16 with the first and last stage one layer short (7 + 14 x 8 + 7): the first stage also holds
// the embedding and the most micro-batches in flight, the last the LM head and the loss.
// Uneven splits are for the non-interleaved schedule only (as Megatron-LM when the flags came).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace protwin::sim::parallel {

// first / last: layers on the first / last stage, 0 = as the other stages.
struct StageSplit {
  int64_t first = 0, last = 0;
  bool uneven() const { return first > 0 || last > 0; }
};

// Why `layers` cannot be split over `pp` stages this way (a message naming the flag:
// --pp, --first-stage-layers or --last-stage-layers), or "" when they can. Every stage must get
// at least one layer.
std::string stage_split_problem(int64_t layers, int64_t pp, const StageSplit& split);

// Layers of each stage (pp entries, summing to `layers`). Throws protwin::Error with
// stage_split_problem()'s message.
std::vector<int64_t> stage_layers(int64_t layers, int64_t pp, const StageSplit& split);

// Llama 3's split: the first and the last stage one layer short of the others, when `pp` > 2
// divides layers + 2 and does not divide `layers` (then the even split exists already);
// otherwise {} (no uneven split of this kind).
StageSplit one_short_ends(int64_t layers, int64_t pp);

}  // namespace protwin::sim::parallel
