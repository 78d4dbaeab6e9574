#include "sim/parallel/search/simulate_4d.h"

#include <algorithm>
#include <cmath>

#include "sim/engine/contention.h"
#include "sim/engine/plan_simulator.h"
#include "sim/parallel/estimator/estimate_json.h"
#include "sim/parallel/estimator/parallel_constraints.h"
#include "traces/error.h"

namespace protwin::sim::parallel {

int64_t nodes_for_layout(const ParallelSizes& z, int64_t g, int64_t nodes, const std::string& machine) {
  for (const auto& [flag, v] : {std::pair<const char*, int64_t>{"--tp", z.tp}, {"--cp", z.cp},
                                {"--pp", z.pp}, {"--dp", z.dp}})
    PROTWIN_CHECK(v >= 1, flag, " ", v, ": must be at least 1");
  PROTWIN_CHECK(world_size(z.tp, z.cp, z.pp, z.dp) > 0, "--tp/--cp/--pp/--dp: TP*CP*PP*DP = ", z.tp, "*", z.cp,
                "*", z.pp, "*", z.dp, " is more than ", kMaxWorldSize, " GPUs");
  const int64_t world = z.world();
  const std::string layout = protwin::detail::concat("TP*CP*PP*DP = ", z.tp, "*", z.cp, "*", z.pp, "*",
                                                     z.dp, " = ", world, " GPUs");
  if (nodes == 0) {
    PROTWIN_CHECK(world <= g || world % g == 0, "--tp/--cp/--pp/--dp: ", layout,
                  " do not fill whole nodes of ", g, " GPUs (machine ", machine, ")");
    return world <= g ? 1 : world / g;
  }
  PROTWIN_CHECK(nodes >= 1, "--nodes ", nodes, ": must be at least 1");
  PROTWIN_CHECK(nodes <= kMaxWorldSize / g, "--nodes ", nodes, ": ", nodes, " node(s) of ", g,
                " GPUs are more than ", kMaxWorldSize, " GPUs");
  PROTWIN_CHECK(nodes * g >= world, "--nodes ", nodes, ": too few: ", nodes, " node(s) of ", g,
                " GPUs (machine ", machine, ") hold ", nodes * g, " GPUs, but ", layout);
  PROTWIN_CHECK(nodes * g == world || (nodes == 1 && world <= g), "--nodes ", nodes, ": ", nodes,
                " node(s) of ", g, " GPUs (machine ", machine, ") hold ", nodes * g, " GPUs, but ",
                layout, "\nhint: the layout must use every GPU; raise --dp or lower --nodes");
  return nodes;
}

void check_tokens_per_iteration(int64_t gbs, int64_t seq) {
  PROTWIN_CHECK(seq >= 1 && seq <= kMaxTokensPerIteration, "--seq ", seq, ": must be from 1 to ",
                kMaxTokensPerIteration);
  PROTWIN_CHECK(gbs >= 1 && gbs <= kMaxTokensPerIteration / seq, "--gbs ", gbs, ": GBS*seq = ", gbs, "*", seq,
                " tokens per iteration, more than the ", kMaxTokensPerIteration,
                " protwin simulates; lower --gbs or --seq");
}

Simulate4dResult simulate_4d(const ModelSpec& model, const hw::HardwareCostModel& cost,
                             const Simulate4dConfig& cfg, ParallelPlan* plan_out) {
  const hw::Machine& machine = cost.machine();
  MegatronOptions o = cfg.options;
  if (o.seq == 0) o.seq = model.default_seq;
  const ParallelSizes& z = o.sizes;
  const int64_t g = machine.gpu.count;
  const int64_t nodes = nodes_for_layout(z, g, cfg.nodes, machine.name);
  PROTWIN_CHECK(nodes == 1 || cost.collectives().has_network(), "--nodes ", nodes, ": machine ",
                machine.name, " has no network between nodes (/network or /collectives/inter_node)");
  PROTWIN_CHECK(o.mbs >= 1, "--mbs ", o.mbs, ": must be at least 1");
  PROTWIN_CHECK(o.gbs >= 1, "--gbs ", o.gbs, ": must be at least 1");
  PROTWIN_CHECK(o.vpp >= 1, "--vpp ", o.vpp, ": must be at least 1");
  PROTWIN_CHECK(o.vpp == 1 || z.pp > 1, "--vpp ", o.vpp, ": the interleaved schedule needs --pp > 1");
  check_tokens_per_iteration(o.gbs, o.seq);
  if (o.split.uneven()) {
    const std::string problem = stage_split_problem(model.layers, z.pp, o.split);
    PROTWIN_CHECK(problem.empty(), problem);
    PROTWIN_CHECK(o.vpp == 1, "--vpp ", o.vpp, ": uneven first/last stages need the non-interleaved schedule (--vpp 1)");
  } else {
    PROTWIN_CHECK(model.layers % z.pp == 0, "--pp ", z.pp, ": layers ", model.layers, " are not divisible by PP ",
                  z.pp);
    PROTWIN_CHECK(model.layers % (z.pp * o.vpp) == 0, "--vpp ", o.vpp, ": layers ", model.layers,
                  " are not divisible by PP*VPP = ", z.pp, "*", o.vpp, " = ", z.pp * o.vpp);
  }
  PROTWIN_CHECK(machine.gpu.compute.count(o.dtype), "--dtype ", o.dtype, ": machine ", machine.name,
                " has no /gpu/compute entry for it");

  // The estimator's constraints and memory (its messages name the flags).
  ParallelConfig pc;
  pc.seq = o.seq, pc.mbs = o.mbs, pc.tp = z.tp, pc.cp = z.cp, pc.pp = z.pp, pc.dp = z.dp;
  pc.gbs = o.gbs, pc.gpus = z.world(), pc.split = o.split;
  EstimateOptions eo;
  eo.recompute = o.recompute;
  eo.distributed_optimizer = o.distributed_optimizer;
  eo.flash_attention = o.flash_attention;
  eo.virtual_stages = o.vpp > 1 ? o.vpp : 0;
  eo.num_microbatches = o.gbs / (o.mbs * z.dp);
  // The workload switches, as the estimator knows them (Fujii's formulas assume SP on).
  eo.sequence_parallel = o.sequence_parallel;
  eo.hidden_dropout = eo.attention_dropout = o.dropout ? 0.1 : 0.0;
  eo.fp32_grad_accum = o.grad_bytes == 4;
  eo.pad_vocab_multiple = o.pad_vocab ? 128 : 0;
  check_fsdp_layout(o);
  if (o.fsdp) {  // FULL_SHARD's memory (fsdp_estimator.cpp): units gathered in the compute dtype
    eo.method = EstimateMethod::kFsdp;
    eo.fsdp_param_bytes = o.dtype == "fp32" ? 4 : 2;
  }

  Simulate4dResult r;
  r.model = model.name;
  r.machine = machine.name;
  r.memory = estimate_memory(model, pc, eo);  // checks the constraints first
  r.gpu_memory_gb = cfg.gpu_memory_gb > 0 ? cfg.gpu_memory_gb
                                          : std::round(static_cast<double>(machine.gpu.memory_bytes) / MemoryEstimate::kGiB);
  r.memory_limit_gib = 0.8 * r.gpu_memory_gb;
  r.fits_80pct = r.memory.total_gib() <= r.memory_limit_gib;

  const Placement pl = place_groups(z, g, nodes);
  r.placement = pl;
  const nlohmann::json meta = {{"machine", machine.name}};
  auto sm_rules = [&](const traces::Plan& header) {
    std::vector<std::string> names;
    for (const auto& st : header.streams) names.push_back(st.name);
    // TP and DP collectives; cp_comm and p2p carry send/recv, whose kernels are not counted.
    return cfg.collective_sms
               ? collective_sm_rules(names, {"tp_comm", "dp_comm"}, machine.gpu.sms, machine.intra_node.ring_channels)
               : std::vector<ContentionRule>{};
  };
  RunStats stats;
  if (cfg.keep_report || plan_out) {  // the whole plan and report, to be written out
    ParallelPlan plan = compile_megatron_plan(model, o, pl, meta);
    traces::Report report = PlanSimulator(cost, sm_rules(plan.plan)).run(plan.plan, &stats);
    r.options = plan.options;
    measure_4d(plan, report, r);
    r.priced_by = report.priced_by;
    if (cfg.keep_report) r.report = std::move(report);
    if (plan_out) *plan_out = std::move(plan);
  } else {  // ops generated as the simulation takes them, records measured as they end
    if (!cfg.plan_path.empty()) {  // the plan, generated once more in id order, described
      MegatronOptions described = o;
      described.describe_ops = true;
      const auto in_order = megatron_op_stream(model, described, pl, meta, true);
      traces::PlanWriter writer(cfg.plan_path, in_order->header());
      while (const traces::Op* op = in_order->next()) writer.add(*op);
      writer.commit();
    }
    const auto stream = megatron_op_stream(model, o, pl, meta);
    Measure4d measure(stream->plan());
    // Records in any order: the Report and trace files spool them by id (traces::RecordSpool).
    traces::Report report = PlanSimulator(cost, sm_rules(stream->header()))
                                .run(*stream, &stats,
                                     [&](const traces::OpRecord& op) {
                                       measure.add(op);
                                       if (cfg.records) cfg.records(op);
                                     },
                                     true);
    r.options = stream->plan().options;
    r.peak_live_ops_per_stage = static_cast<int64_t>(stats.peak_live_ops_per_rank);
    measure.finish(stream->plan(), report, static_cast<int64_t>(stats.ops), r);
    r.priced_by = report.priced_by;
    if (cfg.records) r.report = std::move(report);
  }
  r.peak_live_ops = static_cast<int64_t>(stats.peak_live_ops);
  r.peak_tflops = machine.gpu.compute.at(o.dtype).peak_tflops;
  r.mfu = r.peak_tflops > 0 ? r.tflops_per_gpu / r.peak_tflops : 0;
  return r;
}

Measure4d::Measure4d(const ParallelPlan& plan) : busy_(plan.stages.size(), 0) {
  for (size_t s = 0; s < plan.stages.size(); ++s) stage_of_[plan.stages[s].compute_stream] = s;
}

void Measure4d::add(const traces::OpRecord& op) {
  if (op.kind == "adam_device") return;
  auto it = stage_of_.find(op.stream);
  if (it == stage_of_.end()) return;
  busy_[it->second] += op.end.ns - op.start.ns;
  first_ = std::min(first_, op.start.ns);
  last_ = std::max(last_, op.end.ns);
}

void Measure4d::finish(const ParallelPlan& plan, const traces::Report& report, int64_t ops, Simulate4dResult& r) const {
  const MegatronOptions& o = plan.options;
  const ParallelSizes& z = o.sizes;
  r.world = z.world();
  r.microbatches = plan.microbatches;
  r.ops = ops;
  r.iteration_s = report.iteration.seconds();
  r.streams = report.streams;
  const double tokens = static_cast<double>(o.gbs) * static_cast<double>(o.seq);
  r.tokens_per_s = r.iteration_s > 0 ? tokens / r.iteration_s : 0;
  // Model flops from the unsharded workload; hardware flops from what the stages' ops ran.
  r.model_flops_per_token = plan.model_flops_per_token;
  const double world_s = static_cast<double>(r.world) * r.iteration_s;
  r.tflops_per_gpu = world_s > 0 ? r.model_flops_per_token * tokens / world_s / 1e12 : 0;
  double executed = 0;
  for (const auto& s : plan.stages) executed += s.matmul_flops + s.recompute_matmul_flops;
  r.hw_tflops_per_gpu = r.iteration_s > 0 ? executed / static_cast<double>(z.pp) / r.iteration_s / 1e12 : 0;

  // Bubble: idle time of each stage's compute stream inside the pipeline window.
  const size_t p = plan.stages.size();
  const double window = last_ > first_ ? static_cast<double>(last_ - first_) : 0;
  r.stage_bubble_fraction.assign(p, 0);
  double sum = 0;
  for (size_t s = 0; s < p; ++s) {
    r.stage_bubble_fraction[s] = window > 0 ? 1.0 - static_cast<double>(busy_[s]) / window : 0;
    sum += r.stage_bubble_fraction[s];
  }
  r.bubble_fraction = p ? sum / static_cast<double>(p) : 0;
  r.bubble_fraction_stage0 = p ? r.stage_bubble_fraction[0] : 0;
}

void measure_4d(const ParallelPlan& plan, const traces::Report& report, Simulate4dResult& r) {
  Measure4d m(plan);
  for (const auto& op : report.ops) m.add(op);
  m.finish(plan, report, static_cast<int64_t>(report.ops.size()), r);
}

nlohmann::json placement_to_json(const Placement& p) {
  nlohmann::json j = {{"nodes", p.nodes}, {"gpus_per_node", p.gpus_per_node}};
  for (const GroupPlacement* g : {&p.tp, &p.cp, &p.dp, &p.dp_cp, &p.pp})
    j[g->name] = {{"size", g->size}, {"ranks_per_node", g->ranks_per_node}, {"nodes", g->nodes},
                  {"scope", g->scope()}};
  j["stage_link_inter_node"] = p.stage_link_inter_node;
  return j;
}

nlohmann::json simulate_4d_to_json(const Simulate4dResult& r) {
  const MegatronOptions& o = r.options;
  nlohmann::json streams = nlohmann::json::array();
  for (const auto& s : r.streams)
    streams.push_back({{"name", s.name},
                       {"busy_s", s.busy.seconds()},
                       {"utilization", r.iteration_s > 0 ? s.busy.seconds() / r.iteration_s : 0.0},
                       {"ops", s.ops}});
  nlohmann::json j = {{"model", r.model},
          {"machine", r.machine},
          {"config",
           {{"tp", o.sizes.tp}, {"cp", o.sizes.cp}, {"pp", o.sizes.pp}, {"dp", o.sizes.dp},
            {"vpp", o.vpp}, {"mbs", o.mbs}, {"gbs", o.gbs}, {"seq", o.seq}, {"dtype", o.dtype},
            {"recompute", recompute_name(o.recompute)}, {"microbatches", r.microbatches},
            {"world", r.world}, {"nodes", r.placement.nodes},
            {"gpus_per_node", r.placement.gpus_per_node},
            {"distributed_optimizer", o.distributed_optimizer},
            {"overlap_grad_reduce", o.overlap_grad_reduce},
            {"overlap_param_gather", o.overlap_param_gather},
            {"sequence_parallel", o.sequence_parallel},
            {"dropout", o.dropout},
            {"grad_reduce_bytes", o.grad_bytes},
            {"vocab_parallel_loss", o.vocab_parallel_loss},
            {"pad_vocab", o.pad_vocab},
            {"p2p_scatter_gather", o.p2p_scatter_gather},
            {"p2p_sync", o.p2p_sync},
            {"framework_step", o.framework_step},
            {"local_ddp", o.local_ddp},
            {"bias_passes", o.bias_passes},
            {"fsdp", o.fsdp},
            {"fsdp_passes", o.fsdp_passes}}},
          {"placement", placement_to_json(r.placement)},
          {"iteration_s", r.iteration_s},
          {"tokens_per_s", r.tokens_per_s},
          {"model_flops_per_token", r.model_flops_per_token},
          {"tflops_per_gpu", r.tflops_per_gpu},
          {"hw_tflops_per_gpu", r.hw_tflops_per_gpu},
          {"peak_tflops", r.peak_tflops},
          {"mfu", r.mfu},
          {"bubble_fraction", r.bubble_fraction},
          {"bubble_fraction_stage0", r.bubble_fraction_stage0},
          {"stage_bubble_fraction", r.stage_bubble_fraction},
          {"memory_GiB", r.memory.total_gib()},
          {"memory_limit_GiB", r.memory_limit_gib},
          {"gpu_memory_GB", r.gpu_memory_gb},
          {"fits_80pct", r.fits_80pct},
          {"memory", estimate_to_json(r.memory, r.gpu_memory_gb)},
          {"ops", r.ops},
          {"streams", streams},
          {"priced_by", r.priced_by},
          {"peak_live_ops", r.peak_live_ops},
          {"peak_live_ops_per_stage", r.peak_live_ops_per_stage}};
  if (o.split.uneven()) j["config"]["stage_layers"] = stage_layers_json(o.split);
  return j;
}

}  // namespace protwin::sim::parallel
