#include "runtime/train/trainer.h"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

#include "runtime/cuda/device.h"
#include "runtime/executor/plan_replayer.h"
#include "runtime/profile/stability_probe.h"
#include "runtime/train/checkpoint.h"
#include "traces/error.h"

namespace protwin::rt {

namespace {
// The architecture part of a model spec (names and citations may differ between equal models).
nlohmann::json architecture(nlohmann::json spec) {
  if (spec.is_object()) {
    spec.erase("name");
    spec.erase("source");
  }
  return spec;
}
}  // namespace

TrainResult train(const RuntimePlan& rp, const TrainOptions& o) {
  PROTWIN_CHECK(o.steps >= 0, "--steps: expected at least 0, got ", o.steps);
  check_link_gbps(o.link_gbps);
  PROTWIN_CHECK(o.net_gbps == 0 || (o.net_gbps >= kMinLinkGBps && o.net_gbps <= kMaxLinkGBps), "--net-GBps ",
                o.net_gbps, ": expected 0 (uncapped) or a rate from ", kMinLinkGBps, " to ", kMaxLinkGBps, " GB/s");
  RankGroup& ranks = RankGroup::world();
  PROTWIN_CHECK(rp.ranks == ranks.size(), rp.source, ":/meta/gpus: ", rp.ranks, " GPUs, but ", ranks.size(),
                " processes are running (mpirun -np ", rp.ranks, ")");
  const int64_t global_batch = rp.batch * ranks.size();
  PROTWIN_CHECK(o.checkpoint_every >= 0, "--checkpoint-every: expected at least 0, got ", o.checkpoint_every);
  PROTWIN_CHECK(rp.model.vocab >= 256, rp.source, ":/meta/model_spec/vocab: byte-level training needs a vocabulary of "
                "at least 256, got ", rp.model.vocab);
  const ByteDataset data(o.data, rp.seq);
  const nlohmann::json& spec = rp.plan.meta["model_spec"];

  // Everything refusable is checked before the first step.
  Checkpoint resume;
  const bool resuming = !o.resume_dir.empty();
  if (resuming) {
    resume = read_checkpoint(o.resume_dir);
    PROTWIN_CHECK(architecture(resume.model_spec) == architecture(spec), checkpoint_path(o.resume_dir),
                  ": checkpoint of another model (", resume.model_spec.dump(), ") than the plan's (", spec.dump(), ")");
    PROTWIN_CHECK(o.steps > resume.step, "--steps ", o.steps, ": the checkpoint in ", o.resume_dir, " is at step ",
                  resume.step, " already; nothing to train (--steps counts all steps, e.g. --steps ",
                  resume.step + 10, " trains 10 more)");
  }

  ReplayOptions ro;
  ro.threads = ThreadSplit::choose(cores_per_rank(ThreadSplit::host_cores()), rp.offloads, o.compute_threads);
  ro.link_gbps = o.link_gbps;
  ranks.set_net_gbps(o.net_gbps);
  ro.ranks = &ranks;
  ro.adam.lr = o.lr;
  const std::unique_ptr<Replayer> replayer = make_replayer(rp, ro, resolve_device(o.device));

  int64_t step = 0, pos = 0;
  if (resuming) {
    const int64_t n = resume.params.numel();
    int64_t expected = 0;
    for (const ParamSlot& s : rp.chunks.slots) expected += s.numel;
    PROTWIN_CHECK(n == expected, checkpoint_path(o.resume_dir), ": ", n, " parameters, the model has ", expected);
    replayer->import_flat(StateKind::kParams, resume.params);
    replayer->import_flat(StateKind::kExpAvg, resume.exp_avg);
    replayer->import_flat(StateKind::kExpAvgSq, resume.exp_avg_sq);
    step = resume.step;
    pos = resume.data_position;
    PROTWIN_CHECK(pos >= 0 && pos < data.size(), checkpoint_path(o.resume_dir), ": data position ", pos,
                  " is outside ", o.data, " (", data.size(), " bytes)");
  } else {
    std::vector<at::Tensor> params = allocate_params(rp.model, at::TensorOptions().dtype(at::kFloat));
    init_params(rp.model, params, o.seed);
    replayer->load_params(params);
    pos = data.start_position(o.seed);
  }

  auto save = [&] {
    Checkpoint ck;
    ck.step = step;
    ck.data_position = pos;
    ck.seed = o.seed;
    ck.model_spec = spec;
    ck.params = replayer->export_flat(StateKind::kParams);
    ck.exp_avg = replayer->export_flat(StateKind::kExpAvg);
    ck.exp_avg_sq = replayer->export_flat(StateKind::kExpAvgSq);
    if (ranks.rank() == 0) write_checkpoint(o.checkpoint_dir, ck);
  };

  TrainResult r;
  r.first_step = step + 1;
  r.tokens_per_step = global_batch * rp.seq;
  r.plan_device_high_water = rp.gpu_high_water();
  r.device_capacity = rp.gpu_capacity();
  r.compute_threads = ro.threads.compute;
  r.ranks = ranks.size();
  r.rank = ranks.rank();
  r.device = replayer->device_name();
  const ThreadSplit probe_split = ThreadSplit::choose(ThreadSplit::host_cores(), true);
  StepBlockProbes blocks(o.block_probes, o.block_flush_bytes, probe_split, &ranks);
  if (!o.block_probes.empty()) ro.threads.apply();  // back to the plan's split after the blocks' setup
  while (step < o.steps) {
    at::Tensor tokens, targets;
    data.batch(pos, global_batch, tokens, targets);
    if (ranks.size() > 1) {  // this rank's rows
      tokens = tokens.narrow(0, rp.batch * ranks.rank(), rp.batch).contiguous();
      targets = targets.narrow(0, rp.batch * ranks.rank(), rp.batch).contiguous();
    }
    StepProbes probe;
    if (o.probes) {  // at the profile's compute split (as interleaved.cpp), then back to the plan's
      probe_split.apply();
      probe.gemm_before = reference_gemm_gflops();
      probe.copy_before = reference_copy_gbps(o.link_gbps);
      probe.adam_before = reference_adam_mparams_per_s();
      ro.threads.apply();
    }
    const auto t0 = std::chrono::steady_clock::now();
    StepResult s = replayer->step(tokens, targets, step + 1);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.probes) {
      probe_split.apply();
      probe.gemm_after = reference_gemm_gflops();
      probe.copy_after = reference_copy_gbps(o.link_gbps);
      probe.adam_after = reference_adam_mparams_per_s();
      ro.threads.apply();
      r.probes.push_back(probe);
    }
    if (!o.block_probes.empty()) {  // after the step's probes, at the probes' split
      blocks.after_step();
      ro.threads.apply();
    }
    ++step;
    pos = data.next_position(pos, global_batch);
    double loss = 0;  // the global batch's mean loss, summed in rank order
    for (double l : ranks.all_gather(s.loss)) loss += l;
    r.losses.push_back(ranks.size() > 1 ? loss / ranks.size() : s.loss);
    r.iteration_s.push_back(secs);
    r.peak_device_bytes = std::max(r.peak_device_bytes, s.peak_device_bytes);
    r.peak_device_reserved_bytes = std::max(r.peak_device_reserved_bytes, s.peak_device_reserved_bytes);
    r.peak_pinned_bytes = std::max(r.peak_pinned_bytes, s.peak_pinned_bytes);
    r.peak_pageable_bytes = std::max(r.peak_pageable_bytes, s.peak_pageable_bytes);
    r.plan_peak_device_bytes = std::max(r.plan_peak_device_bytes, s.plan_peak_device_bytes);
    r.peak_host_bytes = std::max(r.peak_host_bytes, s.peak_host_bytes);
    s.report.meta["step"] = step;
    r.last_report = std::move(s.report);
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0 && step % o.checkpoint_every == 0 && step < o.steps)
      save();
  }
  r.last_step = step;
  r.block_probes = blocks.series();
  if (!o.checkpoint_dir.empty()) save();
  const size_t skip = r.iteration_s.size() > 1 ? 1 : 0;
  double total = 0;
  for (size_t i = skip; i < r.iteration_s.size(); ++i) total += r.iteration_s[i];
  const size_t timed = r.iteration_s.size() - skip;
  if (timed > 0 && total > 0) r.tokens_per_s = static_cast<double>(r.tokens_per_step * static_cast<int64_t>(timed)) / total;
  return r;
}

}  // namespace protwin::rt
