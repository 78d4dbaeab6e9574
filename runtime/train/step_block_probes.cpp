#include "runtime/train/step_block_probes.h"

namespace protwin::rt {

StepBlockProbes::StepBlockProbes(const std::vector<traces::OpSignature>& sigs, int64_t flush_bytes,
                                 const ThreadSplit& split, RankGroup* ranks)
    : flush_bytes_(flush_bytes), split_(split), ranks_(ranks && ranks->size() > 1 ? ranks : nullptr) {
  if (sigs.empty()) return;
  split_.apply();
  for (const traces::OpSignature& sig : sigs) {
    benches_.emplace_back(sig);
    benches_.back().time_once_us(flush_bytes_);  // warm-up, untimed
    series_.push_back({sig, {}});
  }
}

void StepBlockProbes::after_step() {
  if (benches_.empty()) return;
  split_.apply();
  for (size_t b = 0; b < benches_.size(); ++b) {
    if (ranks_) ranks_->all_gather(0.0);  // every rank starts the block together
    series_[b].us.push_back(benches_[b].time_once_us(flush_bytes_));
  }
}

}  // namespace protwin::rt
