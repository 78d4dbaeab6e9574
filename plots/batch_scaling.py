#!/usr/bin/python3
"""Throughput against micro-batch size per GPU, per system (batch-scaling).

One column per (model, server). Top: tokens/s of the whole server at each batch, every system at
its best knobs for that batch; a cross at the foot of the panel marks a batch the system cannot fit
(with the memory that stops it). Bottom: ProTrain's speed-up over each baseline at the same batch (log scale).

Reads only the experiment's config.json and results/batch_scaling.csv (written by tabulate.py).

usage: batch_scaling.py CONFIG.json RESULTS_DIR --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import load_table, num  # noqa: E402
from _style import (  # noqa: E402
    MACHINE_LABEL, SYSTEM_COLOUR, SYSTEM_LABEL, SYSTEM_MARKER, figure_args, plt, save)


def main():
    cfg, results, out = figure_args(__doc__)
    rows = load_table(results, "batch_scaling.csv", "experiments/batch-scaling/tabulate.py")
    n = len(cfg["setups"])
    fig, axes = plt.subplots(2, n, figsize=(6.4 * n, 8), height_ratios=[3, 2], squeeze=False)
    for j, st in enumerate(cfg["setups"]):
        ax, bx = axes[0][j], axes[1][j]
        key = (st["model"], st["machine"], st["gpus"])
        sel = [r for r in rows if (r["model"], r["machine"], int(r["gpus"])) == key]
        fitting = [num(r["tokens_per_s"]) for r in sel if num(r["tokens_per_s"])]
        floor = min(fitting) / 2.5
        for k, s in enumerate(cfg["systems"]):
            mine = [r for r in sel if r["system"] == s]
            ok = [(int(r["batch"]), num(r["tokens_per_s"])) for r in mine if num(r["tokens_per_s"])]
            ax.plot(*zip(*ok), marker=SYSTEM_MARKER[s], color=SYSTEM_COLOUR[s],
                    label=SYSTEM_LABEL[s] if j == 0 else None)  # one shared legend
            miss = [r for r in mine if not num(r["tokens_per_s"])]
            for i, r in enumerate(miss):
                y = floor * (1.25 + 0.3 * k)
                ax.plot(int(r["batch"]), y, marker="x", color=SYSTEM_COLOUR[s], markersize=7, linestyle="none")
            if s != "protrain":
                sp = [(int(r["batch"]), num(r["protrain_speedup"])) for r in mine if num(r["protrain_speedup"])]
                bx.plot(*zip(*sp), marker=SYSTEM_MARKER[s], color=SYSTEM_COLOUR[s])
        reasons = sorted({r["misfit"].replace(" memory", "") for r in sel if r["misfit"]})
        if reasons:
            ax.text(0.02, 0.97, f"× = does not fit at this batch\n({', '.join(reasons)} memory)",
                    transform=ax.transAxes, ha="left", va="top", fontsize=8)
        batches = st["batches"]
        for axis in (ax, bx):
            axis.set_xscale("log", base=2)
            axis.set_xticks(batches, [str(b) for b in batches])
            axis.grid(alpha=0.3, which="both")
        ax.set_yscale("log")
        ax.set_ylim(floor, max(fitting) * 1.6)
        ax.set_ylabel("throughput (tokens/s, whole server, log scale)")
        ax.set_title(f"{st['model']} on {st['gpus']} × {MACHINE_LABEL.get(st['machine'], st['machine'])}", fontsize=10)
        bx.axhline(1.0, color="black", linewidth=0.8)
        bx.set_yscale("log")
        ticks = [t for t in (1, 1.5, 2, 3, 5, 10, 20, 50) if t <= bx.get_ylim()[1]]
        bx.set_yticks(ticks, [f"{t:g}" for t in ticks])
        bx.minorticks_off()
        bx.set_ylabel("ProTrain speed-up over the\nbaseline of that colour, same batch (×)")
        bx.set_xlabel("micro-batch size per GPU (sequences of 1024 tokens)")
    fig.suptitle("Throughput against batch size, each system at its best knobs for each batch "
                 "(protwin, simulated)", fontsize=11)
    fig.legend(loc="lower center", ncol=len(cfg["systems"]), fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save(fig, out)


if __name__ == "__main__":
    main()
