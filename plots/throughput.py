#!/usr/bin/python3
"""Throughput of every system over a model ladder on one server (throughput-3090 / -a100).

Top: tokens/s of the whole server per model, one bar per system at its best knobs and batch (log
scale: the ladder spans 1B to 34B parameters); a system that cannot train the model gets an
"does not fit" mark naming the memory that overflows. Bottom: ProTrain's speed-up over each
baseline, with the paper's published band shaded.

Reads only the experiment's config.json and results/ (`protwin compare --json` per model and
`protwin machine --json`).

usage: throughput.py CONFIG.json RESULTS_DIR --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import load_compare, load_machine, misfit_reason, systems_by_name  # noqa: E402
from _style import MACHINE_LABEL, SYSTEM_COLOUR, SYSTEM_LABEL, figure_args, plt, save  # noqa: E402


def main():
    cfg, results, out = figure_args(__doc__)
    machine = load_machine(os.path.join(results, "machine.json"))
    models, systems = cfg["models"], cfg["systems"]
    res = [systems_by_name(load_compare(os.path.join(results, m + ".json"))) for m in models]

    fig, (ax, bx) = plt.subplots(2, 1, figsize=(12, 8.2), height_ratios=[3, 2], sharex=True)
    width = 0.8 / len(systems)
    x = np.arange(len(models))
    fitting = [r[s]["tokens_per_s"] for r in res for s in systems if r[s]["tokens_per_s"]]
    floor = min(fitting) / 3 if fitting else 1
    for k, s in enumerate(systems):
        xs = x - 0.4 + width * (k + 0.5)
        vals = [r[s]["tokens_per_s"] for r in res]
        ax.bar(xs, [v or 0 for v in vals], width, color=SYSTEM_COLOUR[s], label=SYSTEM_LABEL[s])
        for xi, r, v in zip(xs, res, vals):
            if v is None:
                why = misfit_reason(r[s], machine, cfg["gpus"]).replace(" memory", "")
                ax.text(xi, floor * 1.1, f"✗ does not fit: {why}", rotation=90, ha="center", va="bottom",
                        fontsize=7.5, color=SYSTEM_COLOUR[s], fontweight="bold")
            elif s == "protrain":
                ax.text(xi, v * 1.08, f"{v:,.0f}", ha="center", va="bottom", fontsize=6.5, rotation=90)
    ax.set_yscale("log")
    ax.set_ylim(floor, max(fitting) * 4 if fitting else 10)
    ax.set_ylabel("throughput (tokens/s, whole server, log scale)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    ax.set_title(f"{cfg['gpus']} × {MACHINE_LABEL.get(cfg['machine'], cfg['machine'])}: every system at its "
                 f"best knobs and batch (protwin, simulated; seq 1024)", fontsize=10)

    lo, hi = cfg["published"]["speedup_band"]
    bx.axhspan(lo, hi, color="#f0c05a", alpha=0.35, label=f"paper's band {lo}–{hi}×")
    bx.axhline(1.0, color="black", linewidth=0.8)
    bwidth = 0.8 / (len(systems) - 1)
    top = hi
    for k, s in enumerate(systems[1:]):
        xs = x - 0.4 + bwidth * (k + 0.5)
        vals = [r[s].get("protrain_speedup") for r in res]
        bx.bar(xs, [v or 0 for v in vals], bwidth, color=SYSTEM_COLOUR[s], label=f"over {SYSTEM_LABEL[s]}")
        for xi, v, r in zip(xs, vals, res):
            if v is not None:
                bx.text(xi, v + 0.04, f"{v:.2f}", ha="center", va="bottom", fontsize=6, rotation=90)
                top = max(top, v)
            elif r["protrain"]["tokens_per_s"] is not None:
                bx.text(xi, 0.05, "only ProTrain fits", rotation=90, ha="center", va="bottom", fontsize=7,
                        color=SYSTEM_COLOUR[s])
    for xi, r in zip(x, res):
        if r["protrain"]["tokens_per_s"] is None:
            bx.text(xi, 0.5, "ProTrain\ndoes not fit", ha="center", va="bottom", fontsize=7.5)
    bx.set_ylim(0, top * 1.25)
    bx.set_ylabel("ProTrain speed-up (×)")
    bx.grid(axis="y", alpha=0.3)
    bx.legend(loc="upper left", fontsize=7.5, ncol=4)
    bx.set_xticks(x, models)
    bx.set_xlabel("model (ProTrain's ladder, REFERENCE §1)")
    fig.tight_layout()
    save(fig, out)


if __name__ == "__main__":
    main()
