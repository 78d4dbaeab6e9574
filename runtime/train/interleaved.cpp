#include "runtime/train/interleaved.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <ATen/ATen.h>

#include "runtime/cuda/device.h"
#include "runtime/executor/plan_replayer.h"
#include "runtime/memory/copy_engine.h"
#include "runtime/profile/stability_probe.h"
#include "runtime/train/byte_dataset.h"
#include "traces/error.h"

namespace protwin::rt {

InterleavedResult run_interleaved(const std::vector<RuntimePlan>& plans, const InterleaveOptions& o) {
  PROTWIN_CHECK(!plans.empty(), "interleave: expected at least one --plan");
  PROTWIN_CHECK(o.steps >= 1, "--steps: expected at least 1, got ", o.steps);
  check_link_gbps(o.link_gbps);
  const DeviceKind kind = resolve_device(o.device);
  RankGroup one_rank;
  RankGroup& group = o.ranks ? *o.ranks : one_rank;
  group.set_net_gbps(o.net_gbps);
  PROTWIN_CHECK(o.block_probes.empty() || group.size() == 1, "--block-probes: one rank only, got ", group.size());

  // Everything is set up before the first step: data, weights, one replayer per plan.
  struct Running {
    std::unique_ptr<ByteDataset> data;
    std::unique_ptr<Replayer> replayer;
    ThreadSplit split;
    int64_t pos = 0;
  };
  std::vector<Running> run(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    const RuntimePlan& rp = plans[i];
    PROTWIN_CHECK(rp.model.vocab >= 256, rp.source, ":/meta/model_spec/vocab: byte-level training needs a vocabulary "
                  "of at least 256, got ", rp.model.vocab);
    Running& r = run[i];
    r.data = std::make_unique<ByteDataset>(o.data.empty() ? kDefaultDataFile : o.data, rp.seq);
    ReplayOptions ro;
    PROTWIN_CHECK(rp.ranks == group.size(), rp.source, ":/meta/gpus: ", rp.ranks, " GPUs, but ", group.size(),
                  " processes are running (mpirun -np ", rp.ranks, ")");
    ro.threads = ThreadSplit::choose(cores_per_rank(ThreadSplit::host_cores()), rp.offloads);
    ro.link_gbps = o.link_gbps;
    ro.ranks = o.ranks;
    r.split = ro.threads;
    r.replayer = make_replayer(rp, ro, kind);
    std::vector<at::Tensor> params = allocate_params(rp.model, at::TensorOptions().dtype(at::kFloat));
    init_params(rp.model, params, o.seed);
    r.replayer->load_params(params);
    r.pos = r.data->start_position(o.seed);
  }

  InterleavedResult out;
  out.plans.resize(plans.size());
  out.device = run[0].replayer->device_name();
  out.compute_threads = run[0].split.compute;
  // The probe runs at the profile's compute split (runtime/profile/profiler.h), whatever the plan's.
  const ThreadSplit probe_split = ThreadSplit::choose(ThreadSplit::host_cores(), true);
  auto probe = [&](std::vector<double>& gemm, std::vector<double>& copy, std::vector<double>& adam) {
    probe_split.apply();
    gemm.push_back(reference_gemm_gflops());
    copy.push_back(reference_copy_gbps(o.link_gbps));
    adam.push_back(reference_adam_mparams_per_s());
  };
  StepBlockProbes blocks(o.block_probes, o.block_flush_bytes, probe_split, nullptr);
  int64_t index = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    for (size_t n = 0; n < plans.size(); ++n) {
      const size_t i = step % 2 == 0 ? n : plans.size() - 1 - n;
      Running& r = run[i];
      InterleavedPlan& p = out.plans[i];
      if (o.before_step) o.before_step(index++);
      at::Tensor tokens, targets;
      const int64_t global_batch = plans[i].batch * group.size();
      r.data->batch(r.pos, global_batch, tokens, targets);
      if (group.size() > 1) {  // this rank's rows
        tokens = tokens.narrow(0, plans[i].batch * group.rank(), plans[i].batch).contiguous();
        targets = targets.narrow(0, plans[i].batch * group.rank(), plans[i].batch).contiguous();
      }
      probe(p.probe_before, p.copy_probe_before, p.adam_probe_before);
      r.split.apply();  // process-wide: each plan's own compute threads
      if (group.size() > 1) group.all_gather(0.0);  // the ranks start the step together
      const auto t0 = std::chrono::steady_clock::now();
      StepResult s = r.replayer->step(tokens, targets, step + 1);
      p.iteration_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      p.losses.push_back(s.loss);
      probe(p.probe_after, p.copy_probe_after, p.adam_probe_after);
      r.pos = r.data->next_position(r.pos, global_batch);
      p.peak_device_bytes = std::max(p.peak_device_bytes, s.peak_device_bytes);
      p.peak_host_bytes = std::max(p.peak_host_bytes, s.peak_host_bytes);
      s.report.meta["step"] = step + 1;
      p.last_report = std::move(s.report);
      blocks.after_step();  // after the step's probes, at the probes' split
    }
  }
  out.block_probes = blocks.series();
  return out;
}

}  // namespace protwin::rt
