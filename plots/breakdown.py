#!/usr/bin/python3
"""Iteration time split into forward, backward and exposed optimizer, per system (breakdown).

One panel per server; per model a group of stacked bars, one per system at its best knobs and batch.
The bars are normalised to seconds per million tokens of the whole server (iteration time / tokens
per iteration), because each system runs at its own best batch: the bar height is 10^6 / tokens/s,
so lower is faster and bars of different batches compare. The batch and ProTrain's speed-up are
written on each bar.

Reads only results/breakdown.json (written by experiments/breakdown/run.py).

usage: breakdown.py results/breakdown.json --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cli import results_and_out  # noqa: E402
from _style import MACHINE_LABEL, plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

PHASES = [("forward_s_per_Mtok", "forward", "#4c72b0"),
          ("backward_s_per_Mtok", "backward (incl. recompute)", "#dd8452"),
          ("exposed_optimizer_s_per_Mtok", "exposed optimizer (after the last backward op)", "#c44e52")]
SHORT = {"protrain": "ProTrain", "deepspeed": "DeepSpeed", "colossalai": "Colossal-AI", "fsdp": "FSDP"}


def panel(ax, res, machine):
    systems, models = res["systems"], res["models"]
    rows = {(r["model"], r["system"]): r for r in res["rows"] if r["machine"] == machine}
    gap = 1.0
    width = 0.8
    ticks, labels = [], []
    top = max(sum(r.get(k) or 0 for k, _, _ in PHASES) for r in rows.values())
    for g, model in enumerate(models):
        x0 = g * (len(systems) + gap)
        for k, s in enumerate(systems):
            x = x0 + k
            r = rows.get((model, s), {})
            ticks.append(x)
            labels.append(SHORT.get(s, s))
            if r.get("iteration_s") is None:
                ax.text(x, top * 0.02, "does not fit", rotation=90, ha="center", va="bottom", fontsize=7)
                continue
            bottom = 0.0
            for key, _, colour in PHASES:
                ax.bar(x, r[key], width, bottom=bottom, color=colour, edgecolor="white", linewidth=0.5)
                bottom += r[key]
            note = "b%d" % r["batch"]
            if r.get("protrain_speedup"):
                note += "\n%.2f×" % r["protrain_speedup"]
            ax.text(x, bottom + top * 0.01, note, ha="center", va="bottom", fontsize=6.5)
        ax.text(x0 + (len(systems) - 1) / 2, -0.25, model, transform=ax.get_xaxis_transform(), ha="center",
                va="top", fontsize=9, fontweight="bold")
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7.5)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("seconds per 10⁶ tokens (whole server)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("%d × %s" % (res["gpus"], MACHINE_LABEL.get(machine, machine)), fontsize=10)


def main():
    res, out = results_and_out(__doc__, ("machines", "models", "systems", "rows", "gpus"),
                               "results/breakdown.json of experiments/breakdown/run.py")
    fig, axes = plt.subplots(1, len(res["machines"]), figsize=(6.5 * len(res["machines"]), 5.0))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for ax, machine in zip(axes, res["machines"]):
        panel(ax, res, machine)
    handles = [Patch(color=c, label=l) for _, l, c in PHASES]
    fig.legend(handles=handles, loc="upper center", ncol=3, fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.905))
    fig.suptitle("Where the iteration goes (protwin, simulated; each system at its best knobs and batch, seq 1024).\n"
                 "Bar height = 10⁶ / tokens/s: lower is faster. Labels: batch per GPU, ProTrain's speed-up over the system.",
                 fontsize=10)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.79, bottom=0.2, wspace=0.15)
    save(fig, out)


if __name__ == "__main__":
    main()
