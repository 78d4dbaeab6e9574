#!/usr/bin/python3
"""Ablation of protwin's host-side mechanisms (issue #18): for every mechanism in config.json (a set
of CLI switches), the error against three validations:

  - megatron: experiments/megatron-validation's 24 published Megatron-LM / MosaicML runs (its
    config.json and its metric functions, reused), rows within +-15 % and the mean signed error;
  - neusight: NeuSight's HuggingFace GPT-2-large fp32 training steps (labels in
    ../shared/data/gpu/neusight/labels/), step (forward + backward), forward and backward errors;
  - speedups: ProTrain over DeepSpeed, Colossal-AI and FSDP on rtx3090-server, 4 GPUs (protwin
    compare), against REFERENCE.md's 1.47-3.01x.

Writes results/ablation.json and results/ablation.csv; plots/host_dispatch.py draws the table.
Exits 1 when the last mechanism (everything on) misses a criterion of the issue.
Predict, don't fit: the host costs come from the machine files' host_dispatch sections (Kineto
traces and a hook micro-benchmark), none of these validations chose a value.
"""
import gzip
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import _protwin  # noqa: E402

MV_DIR = os.path.join(os.path.dirname(HERE), "megatron-validation")
_spec = importlib.util.spec_from_file_location("megatron_validation_run", os.path.join(MV_DIR, "run.py"))
mv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mv)


def megatron(mech):
    """Rows of megatron-validation with mechanism `mech` (its flags for every command, the framework
    and extra flags of each set): (within, n, mean signed error, per-row errors)."""
    cfg = _protwin.load_config(MV_DIR)
    tol = cfg["criterion"]["relative_tolerance"]
    errs = []
    flags = mech["flags"]
    m = dict(cfg["megatron"], framework=mech["megatron_framework"])
    for r in m["rows"]:
        res, _, _ = _protwin.run(mv.megatron_args(m, r) + flags + mech.get("megatron_flags", []) + ["--json"])
        sim = mv.megatron_flops_per_iteration(r, m["seq"], m["vocab"]) / (res["iteration_s"] * r["gpus"]) / 1e12
        errs.append({"name": "megatron " + r["name"], "rel_err": sim / r["published_tflops_per_gpu"] - 1})
    mo = dict(cfg["mosaicml"], framework=mech["mosaicml_framework"])
    for r in mo["rows"]:
        res, _, _ = _protwin.run(mv.mosaic_args(mo, r) + flags + mech.get("mosaicml_flags", []) + ["--json"])
        tps = r["gbs"] * mo["seq"] / res["iteration_s"] / r["gpus"]
        mfu = mv.mosaic_flops_per_token(r, mo["seq"]) * tps / (r["peak_tflops"] * 1e12)
        errs.append({"name": "mosaicml " + r["name"], "rel_err": mfu / (r["published_mfu_pct"] / 100) - 1})
    within = sum(abs(e["rel_err"]) <= tol for e in errs)
    return {"within": within, "rows": len(errs), "mean_signed_error": sum(e["rel_err"] for e in errs) / len(errs),
            "errors": errs}


def neusight(cfg, flags):
    out = []
    for run in cfg["runs"]:
        label_path = os.path.join(cfg["labels_dir"], run["gpu"], "gpt2_large-train-{}-{}.json".format(cfg["seq"], run["batch"]))
        with open(label_path) as f:
            label = json.load(f)
        res, _, _ = _protwin.run(["search", "--model", cfg["model"], "--machine", run["machine"], "--system", "ddp",
                                  "--gpus", 1, "--dtype", "fp32", "--hf-eager", "--batch", run["batch"],
                                  "--seq", cfg["seq"]] + flags + ["--json"])
        fwd, bwd = res["forward_s"], res["backward_s"]
        meas = {"step": label["e2e_latency"] / 1e3, "forward": label["fw_latency"] / 1e3, "backward": label["bwall_latency"] / 1e3}
        sim = {"step": fwd + bwd, "forward": fwd, "backward": bwd}
        out.append({"gpu": run["gpu"], "machine": run["machine"], "batch": run["batch"], "measured_s": meas,
                    "simulated_s": sim, "rel_err": {k: sim[k] / meas[k] - 1 for k in meas}})
    return out


def speedups(cfg, flags):
    res, _, _ = _protwin.run(["compare", "--model", cfg["model"], "--machine", cfg["machine"], "--gpus", cfg["gpus"]]
                             + flags + ["--json"])
    tput = {r["name"]: r.get("tokens_per_s") for r in res["systems"]}
    pt = tput.get("protrain")
    return {s: (pt / tput[s] if pt and tput.get(s) else None) for s in ("deepspeed", "colossalai", "fsdp")}


def main():
    cfg = _protwin.load_config(HERE)
    crit = cfg["criteria"]
    table = []
    others = {}  # NeuSight and speed-ups depend only on the common flags: run each set once
    for mech in cfg["mechanisms"]:
        print(f"mechanism: {mech['name']}", flush=True)
        flags = mech["flags"]
        key = tuple(str(f) for f in flags)
        if key not in others:
            others[key] = (neusight(cfg["neusight"], flags), speedups(cfg["speedups"], flags))
        row = {"mechanism": mech["name"], "flags": flags,
               "megatron_flags": [mech["megatron_framework"]] + mech.get("megatron_flags", []),
               "mosaicml_flags": [mech["mosaicml_framework"]] + mech.get("mosaicml_flags", []),
               "megatron": megatron(mech), "neusight": others[key][0], "speedups": others[key][1]}
        mg, ns, sp = row["megatron"], row["neusight"], row["speedups"]
        lo, hi = crit["speedup_range"]
        row["criteria"] = {
            "megatron_rows": mg["within"] >= crit["megatron_within_15pct_min_rows"],
            "megatron_mean": abs(mg["mean_signed_error"]) <= crit["megatron_mean_signed_error_abs_max"],
            "neusight_step": all(abs(n["rel_err"]["step"]) <= crit["neusight_step_rel_tol"] for n in ns),
            "neusight_fwd_bwd": all(abs(n["rel_err"][k]) <= crit["neusight_fwd_bwd_rel_tol"]
                                    for n in ns for k in ("forward", "backward")),
            "speedups": all(v is not None and lo <= v <= hi for v in sp.values()),
        }
        table.append(row)
    _protwin.write_json(os.path.join(HERE, "results", "ablation.json"), {"criteria": crit, "table": table})
    flat = []
    for row in table:
        ns = row["neusight"]
        flat.append({"mechanism": row["mechanism"], "megatron_within": row["megatron"]["within"],
                     "megatron_mean_signed_error": row["megatron"]["mean_signed_error"],
                     **{f"neusight_{n['gpu']}_b{n['batch']}_{k}": n["rel_err"][k] for n in ns for k in ("step", "forward", "backward")},
                     **{f"speedup_{s}": v for s, v in row["speedups"].items()}})
    _protwin.write_csv(os.path.join(HERE, "results", "ablation.csv"), flat, list(flat[0].keys()))
    for row in table:
        mg = row["megatron"]
        print(f"{row['mechanism']:>14s}: megatron {mg['within']}/{mg['rows']} within 15 %, mean {100 * mg['mean_signed_error']:+.1f} %; "
              + "neusight " + ", ".join(f"{n['gpu'][7:11]} b{n['batch']} step {100 * n['rel_err']['step']:+.0f} %" for n in row["neusight"])
              + "; speed-ups " + ", ".join(f"{s} {v:.2f}x" if v else f"{s} -" for s, v in row["speedups"].items()))
    last = table[-1]["criteria"]
    missed = [k for k, ok in last.items() if not ok]
    if missed:
        print("MISSED with every mechanism on: " + ", ".join(missed))
        sys.exit(1)


if __name__ == "__main__":
    main()
