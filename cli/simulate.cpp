// protwin simulate: run a Plan through the discrete-event simulator and report what happened.
// The Plan is read from --plan, or compiled from --model/--machine/--policy in one step.
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/options.h"
#include "cli/policy_options.h"
#include "cli/subcommand.h"
#include "cli/summary.h"
#include "hwmodels/cost_model_choice.h"
#include "sim/engine/plan_simulator.h"
#include "sim/offload/compiler/knobs.h"
#include "sim/offload/compiler/offload_compiler.h"
#include "sim/offload/analytic/runtime_memory.h"
#include "sim/offload/search/search.h"
#include "sim/workload/workload.h"
#include "traces/chrome_trace.h"
#include "traces/error.h"
#include "traces/json_reader.h"
#include "traces/plan.h"
#include "traces/report.h"

namespace protwin::cli {
namespace {

int run_simulate(const std::vector<std::string>& args) {
  po::options_description desc("options");
  std::string plan_path, rates_path, out_path, trace_path, policy_path, plan_out;
  std::vector<std::string> knob_args;
  int64_t batch = 1;
  PolicyArgs pa;  // the --model flags (resolve_policy_inputs); --machine, --set and the cost flags also for --plan
  desc.add_options()
      ("plan", po::value(&plan_path), "Plan to simulate (protwin.plan JSON)")
      ("rates", po::value(&rates_path),
       "per-stream rates (protwin.rates JSON) for --plan; default: the plan's meta.rates, else built-in unit rates")
      ("model", po::value(&pa.model), "compile a plan for this model (zoo name, spec file or inline spec)")
      ("machine", po::value(&pa.machine),
       "cost ops with this machine's hardware model (with --model, or with --plan: a plan compiled for another "
       "machine is simulated with a warning on stderr; it keeps its own memory pools)")
      ("policy", po::value(&policy_path), "knobs JSON for --model, e.g. {\"system\": \"protrain\", \"n_persist\": 2}")
      ("knob", po::value(&knob_args)->composing(),
       "set one knob for --model, over --policy (repeatable): --knob n_persist=2 --knob system=deepspeed")
      ("gpus", po::value(&pa.gpus)->default_value(0), "data-parallel GPUs for --model, all nodes together (0: all of the nodes)")
      ("nodes", po::value(&pa.nodes), "nodes the GPUs spread over for --model (default: one, or as many as --gpus fills)")
      ("batch", po::value(&batch)->default_value(1), "micro-batch per GPU for --model")
      ("seq", po::value(&pa.seq)->default_value(0), "sequence length for --model (0: the model's default)")
      ("dtype", po::value(&pa.dtype)->default_value("fp16"), "compute dtype for --model: fp16, bf16, fp32")
      ("flash", po::bool_switch(&pa.flash), "FlashAttention for --model")
      ("hf-eager", po::bool_switch(&pa.hf_eager),
       "GPT-2 family, with --model: HuggingFace GPT2Block's eager kernels and its dropout 0.1")
      ("set", po::value(&pa.set)->composing(), "override a machine field (repeatable)")
      ("plan-out", po::value(&plan_out), "write the compiled plan (with --model)")
      ("output,o", po::value(&out_path), "write the Report (protwin.report JSON) here")
      ("chrome-trace", po::value(&trace_path), "write a Chrome trace (open in ui.perfetto.dev)")
      ("runtime-memory", "also predict the device memory protwin's runtime allocates replaying this plan "
                         "(fp32 gpt2/llama plans; sim/offload/analytic/runtime_memory.h)")
      ("json", "print the summary as JSON");
  add_cost_options(desc, pa.no_host_dispatch, pa.profile);
  po::variables_map vm;
  if (!parse_options("protwin simulate (--plan P.json [--rates R.json | --machine H] | --model M --machine H "
                     "[--policy knobs.json] [--batch B]) [-o report.json] [--chrome-trace trace.json] [--json]",
                     desc, args, vm))
    return 0;
  PROTWIN_CHECK(vm.count("plan") || vm.count("model"), "--plan or --model is required");
  PROTWIN_CHECK(!(vm.count("plan") && vm.count("model")), "--plan and --model exclude each other");
  PROTWIN_CHECK(!(vm.count("rates") && vm.count("machine")), "--rates and --machine exclude each other");
  if (vm.count("plan")) {
    // A plan is simulated as it is: the flags that compile one would be silently ignored.
    for (const char* flag : {"policy", "knob", "dtype", "batch", "gpus", "nodes", "seq", "flash", "hf-eager", "plan-out"})
      PROTWIN_CHECK(!given(vm, flag), "--", flag, ": only with --model (a --plan is simulated as it is)");
    for (const char* flag : {"set", "profile"})
      PROTWIN_CHECK(!given(vm, flag) || vm.count("machine"), "--", flag,
                    ": only with --machine (--rates and a plan's meta.rates have no machine fields or kernels)");
  }

  traces::Plan plan;
  traces::Report report;
  std::optional<sim::offload::Candidate> candidate;  // with --model: throughput and the time split
  if (vm.count("model")) {
    PROTWIN_CHECK(vm.count("machine"), "--machine is required with --model");
    pa.batch = std::to_string(batch);
    PolicyInputs in = resolve_policy_inputs(pa);
    const nlohmann::json policy =
        vm.count("policy") ? traces::JsonDocument::load(policy_path).json() : nlohmann::json::object();
    const sim::Workload w = sim::offload::options_workload(in.model, in.search, batch);
    const sim::offload::OffloadKnobs knobs =
        sim::offload::knobs_from_args(policy, policy_path, knob_args, [&](const sim::offload::OffloadKnobs& k) {
          sim::offload::check_knobs(w, sim::offload::layout_for(w, k), k, in.search.gpus);
        });
    sim::offload::CompiledPlan compiled;
    const sim::offload::Candidate c = sim::offload::evaluate(w, *in.cost, in.search.gpus, knobs, &compiled, &report, in.search.nodes);
    if (!c.simulated) throw Error(c.failure);
    plan = std::move(compiled.plan);
    if (!plan_out.empty()) traces::write_plan(plan, plan_out);
    candidate = c;
  } else {
    plan = traces::read_plan(plan_path);
    const hw::CostModelChoice choice{vm.count("machine") ? pa.machine : "", pa.set, pa.no_host_dispatch, pa.profile,
                                     rates_path};
    const auto cost = hw::plan_cost_model(choice, plan, plan_path);
    const nlohmann::json& meta_machine = plan.meta.contains("machine") ? plan.meta["machine"] : nlohmann::json();
    const std::string compiled_for = meta_machine.is_string() ? meta_machine.get<std::string>() : "";
    if (const auto* hardware = dynamic_cast<const hw::HardwareCostModel*>(cost.cost.get()))
      if (!compiled_for.empty() && compiled_for != hardware->machine().name)
        std::cerr << "protwin simulate: warning: " << plan_path << " was compiled for machine " << compiled_for
                  << "; simulating it with " << hardware->machine().name << " (its memory pools keep " << compiled_for
                  << "'s capacities)\n";
    traces::validate(plan);
    report = sim::PlanSimulator(*cost.cost).run(plan);
  }

  std::optional<sim::offload::RuntimeMemory> runtime_memory;
  if (vm.count("runtime-memory")) runtime_memory = sim::offload::predict_runtime_memory(plan, report);

  if (!out_path.empty()) traces::write_report(report, out_path);
  if (!trace_path.empty()) traces::write_chrome_trace(report, trace_path);
  if (vm.count("json")) {
    nlohmann::json j = report_summary_json(report);
    if (candidate) j.update(nlohmann::json(*candidate));
    if (runtime_memory)
      j["runtime_memory"] = {{"device_allocated_peak_bytes", runtime_memory->allocated_peak_bytes},
                             {"device_reserved_peak_bytes", runtime_memory->reserved_peak_bytes},
                             {"states_bytes", runtime_memory->states_bytes},
                             {"peak_op", runtime_memory->peak_op}};
    return print_json(j);
  }
  print_report_summary(std::cout, report);
  if (runtime_memory)
    std::printf("runtime device memory (predicted): %s allocated, %s reserved at peak (op %d); the plan's bytes "
                "are the gpu pool above\n",
                human_bytes(runtime_memory->allocated_peak_bytes).c_str(),
                human_bytes(runtime_memory->reserved_peak_bytes).c_str(), runtime_memory->peak_op);
  if (candidate)
    std::printf("throughput:   %.1f tokens/s (forward %.3f s, backward %.3f s, exposed optimizer %.3f s)\n",
                candidate->tokens_per_s, candidate->forward_s, candidate->backward_s, candidate->exposed_optimizer_s);
  if (!plan_out.empty()) std::cout << "plan:         " << plan_out << written_size(plan_out) << "\n";
  if (!out_path.empty()) std::cout << "report:       " << out_path << written_size(out_path) << "\n";
  if (!trace_path.empty())
    std::cout << "chrome trace: " << trace_path << written_size(trace_path) << "  (open in ui.perfetto.dev)\n";
  return 0;
}

}  // namespace
}  // namespace protwin::cli

PROTWIN_SUBCOMMAND("simulate", "simulate one training iteration of a Plan (or compile one from --model/--policy)",
                   protwin::cli::run_simulate)
