#!/usr/bin/python3
"""The host-dispatch ablation (experiments/host-dispatch): per mechanism, the error against each
validation: Megatron-LM/MosaicML relative errors per run, NeuSight GPT-2-large step errors, and
ProTrain's speed-ups with the published 1.47-3.01x band.

Reads experiments/host-dispatch/results/ablation.json (written by that experiment's run.py):
{"criteria": {...}, "table": [{"mechanism", "megatron": {"errors": [{"name", "rel_err"}]},
"neusight": [{"gpu", "batch", "rel_err": {"step", ...}}], "speedups": {system: x}}]}.

usage: host_dispatch.py ablation.json --out PREFIX   (writes PREFIX.png and PREFIX.svg)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _style import load_json, plt, save  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ablation")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    doc = load_json(a.ablation, ["criteria", "table"], "host-dispatch ablation")
    table = doc["table"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    w = 0.8 / len(table)
    for i, row in enumerate(table):
        errs = row["megatron"]["errors"]
        axes[0].bar([k + i * w for k in range(len(errs))], [100 * e["rel_err"] for e in errs], w, label=row["mechanism"])
        ns = row["neusight"]
        axes[1].bar([k + i * w for k in range(len(ns))], [100 * n["rel_err"]["step"] for n in ns], w, label=row["mechanism"])
        sp = row["speedups"]
        axes[2].bar([k + i * w for k in range(len(sp))], [v or 0 for v in sp.values()], w, label=row["mechanism"])
    axes[0].axhspan(-15, 15, color="#dddddd", zorder=0)
    axes[0].set_title("Megatron-LM / MosaicML: error per run (band +-15 %)")
    axes[0].set_ylabel("simulated / published - 1 (%)")
    axes[0].set_xticks(range(len(table[0]["megatron"]["errors"])))
    axes[0].set_xticklabels([e["name"].split(" ", 1)[1] for e in table[0]["megatron"]["errors"]], rotation=90, fontsize=6)
    axes[1].axhspan(-10, 10, color="#dddddd", zorder=0)
    axes[1].set_title("NeuSight GPT-2-large fp32 step (band +-10 %)")
    axes[1].set_xticks(range(len(table[0]["neusight"])))
    axes[1].set_xticklabels([f"{n['gpu'][7:11]} b{n['batch']}" for n in table[0]["neusight"]])
    lo, hi = doc["criteria"]["speedup_range"]
    axes[2].axhspan(lo, hi, color="#dddddd", zorder=0)
    axes[2].set_title("ProTrain speed-up, 4 x RTX 3090 (band 1.47-3.01x)")
    axes[2].set_xticks(range(len(table[0]["speedups"])))
    axes[2].set_xticklabels(list(table[0]["speedups"].keys()))
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, a.out)


if __name__ == "__main__":
    main()
