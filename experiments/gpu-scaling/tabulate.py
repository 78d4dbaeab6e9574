#!/usr/bin/python3
"""Tabulates the gpu-scaling experiment: reads config.json and results/ (`protwin compare --json`
per model, server and GPU count; ProTrain's `search --ablation all-ckpt --json`; `protwin machine
--json`) and writes
  results/gpu_scaling.csv  one row per (model, server, GPUs, system): tokens/s, batch, scaling over
                           the same system on 1 GPU, or the memory that stops it;
  results/summary.json     ProTrain's 4-over-1 scaling and the verdict on each README criterion;
and prints the README's table (markdown).

usage: tabulate.py EXPERIMENT_DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
from _results import (  # noqa: E402
    GIB, experiment, load_compare, load_machine, misfit_reason, systems_by_name, write_summary, write_table)
from _style import load_json  # noqa: E402

ALL_CKPT = "protrain-all-ckpt"


def main():
    cfg, res = experiment(sys.argv[1])
    systems = cfg["systems"] + [ALL_CKPT]
    rows = []
    for setup in cfg["setups"]:
        model, m = setup["model"], setup["machine"]
        machine = load_machine(os.path.join(res, m + ".json"))
        for g in cfg["gpus"]:
            base = os.path.join(res, f"{model}_{m}_{g}gpu")
            by = systems_by_name(load_compare(base + ".json"))
            ck = base + "_protrain_all_ckpt.json"
            if os.path.exists(ck):
                by[ALL_CKPT] = load_json(ck, ("tokens_per_s", "batch"), "`protwin search --json` output")
            else:
                by[ALL_CKPT] = {"tokens_per_s": None, "batch": None}
            for s in systems:
                e = by[s]
                rows.append({"model": model, "machine": m, "gpus": g, "system": s,
                             "tokens_per_s": e["tokens_per_s"], "batch": e["batch"],
                             "tokens_per_s_per_gpu": e["tokens_per_s"] / g if e["tokens_per_s"] else None,
                             "scaling_over_1gpu": None,
                             "misfit": (misfit_reason(e, machine, g) or "") if s != ALL_CKPT else
                             ("" if e["tokens_per_s"] else "does not fit"),
                             "closest_setting_gpu_GiB": e.get("smallest_peak_gpu_bytes", 0) / GIB or None,
                             "closest_setting_host_GiB_per_rank": e.get("smallest_host_bytes", 0) / GIB or None})
    for r in rows:
        one = next(q for q in rows if (q["model"], q["machine"], q["system"], q["gpus"]) ==
                   (r["model"], r["machine"], r["system"], 1))
        if r["tokens_per_s"] and one["tokens_per_s"]:
            r["scaling_over_1gpu"] = r["tokens_per_s"] / one["tokens_per_s"]
    write_table(os.path.join(res, "gpu_scaling.csv"), rows)

    summary = {"setups": [], "published": []}
    tol = cfg["criteria"]["published_tolerance"]
    for setup in cfg["setups"]:
        sel = [r for r in rows if (r["model"], r["machine"]) == (setup["model"], setup["machine"])]
        pt4 = next(r for r in sel if r["system"] == "protrain" and r["gpus"] == max(cfg["gpus"]))
        ahead = all(r["tokens_per_s"] is None or (p["tokens_per_s"] or 0) >= r["tokens_per_s"]
                    for r in sel if r["system"] in cfg["systems"][1:]
                    for p in sel if p["system"] == "protrain" and p["gpus"] == r["gpus"])
        summary["setups"].append({**setup, "protrain_scaling_4_over_1": pt4["scaling_over_1gpu"],
                                  "protrain_at_least_every_baseline": ahead})
    for p in cfg["published"]:
        got = next(s["protrain_scaling_4_over_1"] for s in summary["setups"]
                   if (s["model"], s["machine"]) == (p["model"], p["machine"]))
        summary["published"].append({**p, "protwin": got,
                                      "within_tolerance":
                                          got is not None and abs(got / p["speedup_4_over_1"] - 1) <= tol})
    summary["reproduced"] = all(s["protrain_at_least_every_baseline"] for s in summary["setups"]) and \
        all(p["within_tolerance"] for p in summary["published"])
    write_summary(os.path.join(res, "summary.json"), summary)

    print("| model, server | system | " + " | ".join(f"{g} GPU" for g in cfg["gpus"]) + f" | {max(cfg['gpus'])}/1 |")
    print("|---|---|" + "---|" * (len(cfg["gpus"]) + 1))
    for setup in cfg["setups"]:
        for s in systems:
            sel = [r for r in rows if (r["model"], r["machine"], r["system"]) == (setup["model"], setup["machine"], s)]
            cells = [f"{r['tokens_per_s']:.0f} (b{r['batch']})" if r["tokens_per_s"] else f"— ({r['misfit']})"
                     for r in sel]
            sc = sel[-1]["scaling_over_1gpu"]
            print(f"| {setup['model']}, {setup['machine']} | {s} | " + " | ".join(cells) +
                  f" | {'—' if sc is None else f'{sc:.2f}×'} |")
    print(f"\nreproduced: {summary['reproduced']}")
    return 0 if summary["reproduced"] else 1  # exit 1: the criterion is missed


if __name__ == "__main__":
    sys.exit(main())
