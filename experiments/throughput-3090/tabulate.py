#!/usr/bin/python3
"""Tabulates a throughput experiment (throughput-3090 or throughput-a100): reads the experiment's
config.json and results/<model>.json (`protwin compare --json`) and writes
  results/throughput.csv  one row per (model, system): tokens/s, batch, times, memory, knobs,
                          or why it does not fit;
  results/speedups.csv    ProTrain's speed-up over each baseline per model;
  results/summary.json    the speed-up ranges and the verdict on each criterion of the README;
and prints the README's tables (markdown).

usage: tabulate.py EXPERIMENT_DIR
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
from _results import (  # noqa: E402
    GIB, experiment, load_compare, load_machine, misfit_reason, systems_by_name, write_summary, write_table)

KNOBS = ("chunk_bytes", "n_persist", "n_buffer", "n_swap", "n_checkpoint")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, spec="{:.2f}"):
    return "—" if x is None else spec.format(x)


def main():
    cfg, res = experiment(sys.argv[1])
    machine = load_machine(os.path.join(res, "machine.json"))
    systems, baselines = cfg["systems"], cfg["systems"][1:]
    rows, speedups = [], {b: [] for b in baselines}
    for model in cfg["models"]:
        r = load_compare(os.path.join(res, model + ".json"))
        by = systems_by_name(r)
        for s in systems:
            e = by[s]
            knobs = e.get("knobs") or {}
            rows.append({"model": model, "system": s, "fits": e["tokens_per_s"] is not None,
                         "misfit": misfit_reason(e, machine, r["gpus"]) or "",
                         "closest_setting_gpu_GiB": e.get("smallest_peak_gpu_bytes", 0) / GIB or None,
                         "closest_setting_host_GiB_per_rank": e.get("smallest_host_bytes", 0) / GIB or None,
                         "tokens_per_s": e["tokens_per_s"], "batch": e["batch"],
                         "iteration_s": e["iteration_s"], "forward_s": e["forward_s"],
                         "backward_s": e["backward_s"], "exposed_optimizer_s": e["exposed_optimizer_s"],
                         "peak_gpu_GiB": e["peak_gpu_bytes"] / GIB if e["peak_gpu_bytes"] else None,
                         **{k: knobs.get(k) for k in KNOBS},
                         "protrain_speedup": e.get("protrain_speedup")})
            if s in speedups and e.get("protrain_speedup") is not None:
                speedups[s].append((model, e["protrain_speedup"]))
    write_table(os.path.join(res, "throughput.csv"), rows)

    crit = cfg["criteria"]
    lo, hi = crit["mean_speedup_band"]
    summary = {"machine": cfg["machine"], "gpus": cfg["gpus"], "baselines": {}}
    write_table(os.path.join(res, "speedups.csv"),
                [{"baseline": b, "model": model, "protrain_speedup": x} for b in baselines for model, x in speedups[b]])
    for b in baselines:
        xs = [x for _, x in speedups[b]]
        only_pt = [row["model"] for row in rows if row["system"] == b and not row["fits"]
                   and any(q["model"] == row["model"] and q["system"] == "protrain" and q["fits"] for q in rows)]
        g = geomean(xs)
        summary["baselines"][b] = {"models_compared": len(xs), "min": min(xs) if xs else None,
                                   "geomean": g, "max": max(xs) if xs else None,
                                   "models_only_protrain_fits": only_pt,
                                   "all_at_least_1": all(x >= crit["speedup_at_least"] for x in xs),
                                   "geomean_in_band": g is not None and lo <= g <= hi}
    pt = [row["tokens_per_s"] for row in rows if row["system"] == "protrain" and row["fits"]]
    summary["protrain_tokens_per_s"] = {"models": len(pt), "arithmetic_mean": sum(pt) / len(pt) if pt else None,
                                        "geometric_mean": geomean(pt)}
    big = [row["tokens_per_s"] for row in rows if row["system"] == "protrain" and row["fits"]
           and row["model"] != "gpt2-1b"]
    summary["protrain_tokens_per_s"]["arithmetic_mean_without_gpt2_1b"] = sum(big) / len(big) if big else None
    pub = cfg["published"].get("protrain_mean_tokens_per_s")
    tol = crit.get("protrain_mean_tolerance")
    if pub and tol and pt:
        mean = summary["protrain_tokens_per_s"]["arithmetic_mean"]
        summary["protrain_mean_within_tolerance"] = abs(mean / pub - 1) <= tol
    summary["reproduced"] = all(v["all_at_least_1"] and v["geomean_in_band"] for v in summary["baselines"].values()) \
        and summary.get("protrain_mean_within_tolerance", True)
    write_summary(os.path.join(res, "summary.json"), summary)

    # README tables.
    print("| model | " + " | ".join(systems) + " | ProTrain knobs (persist/buffer/swap/ckpt, chunk) |")
    print("|---" * (len(systems) + 2) + "|")
    for model in cfg["models"]:
        cells, knobs = [], ""
        for s in systems:
            row = next(q for q in rows if q["model"] == model and q["system"] == s)
            cells.append(f"{row['tokens_per_s']:.0f} (b{row['batch']})" if row["fits"] else f"— ({row['misfit']})")
            if s == "protrain" and row["fits"]:
                knobs = (f"{row['n_persist']}/{row['n_buffer']}/{row['n_swap']}/{row['n_checkpoint']}, "
                         f"{row['chunk_bytes'] / 2**20:.0f} MiB")
        print(f"| {model} | " + " | ".join(cells) + f" | {knobs} |")
    print()
    print("| ProTrain over | models | min | geometric mean | max | only ProTrain fits | paper |")
    print("|---|---|---|---|---|---|---|")
    for b, v in summary["baselines"].items():
        print(f"| {b} | {v['models_compared']} | {fmt(v['min'])}× | {fmt(v['geomean'])}× | {fmt(v['max'])}× | "
              f"{', '.join(v['models_only_protrain_fits']) or '—'} | {lo}–{hi}× |")
    m = summary["protrain_tokens_per_s"]
    print(f"\nProTrain tokens/s over {m['models']} models: arithmetic mean {fmt(m['arithmetic_mean'], '{:.0f}')}, "
          f"without gpt2-1b {fmt(m['arithmetic_mean_without_gpt2_1b'], '{:.0f}')}, "
          f"geometric mean {fmt(m['geometric_mean'], '{:.0f}')}; reproduced: {summary['reproduced']}")
    return 0 if summary["reproduced"] else 1  # exit 1: the criterion is missed


if __name__ == "__main__":
    sys.exit(main())
