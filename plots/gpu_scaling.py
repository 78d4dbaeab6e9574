#!/usr/bin/python3
"""Throughput against data-parallel GPU count per system (gpu-scaling), one panel per (model, server).

Solid lines: every system at its best knobs and batch (`protwin compare`). Dashed red: ProTrain's
search restricted to all-CKPT, drawn because on one RTX 3090 it beats the unrestricted pick. Dotted
grey: linear scaling from ProTrain's 1-GPU throughput. The star is the paper's published scaling
where there is one; a system that does not fit is listed under the panel with the memory that stops it.

Reads only the experiment's config.json and results/gpu_scaling.csv (written by tabulate.py).

usage: gpu_scaling.py CONFIG.json RESULTS_DIR --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import load_table, num  # noqa: E402
from _style import (  # noqa: E402
    MACHINE_LABEL, SYSTEM_COLOUR, SYSTEM_LABEL, SYSTEM_MARKER, figure_args, plt, save)

ALL_CKPT = "protrain-all-ckpt"


def main():
    cfg, results, out = figure_args(__doc__)
    rows = load_table(results, "gpu_scaling.csv", "experiments/gpu-scaling/tabulate.py")
    gpus = cfg["gpus"]
    fig, axes = plt.subplots(1, len(cfg["setups"]), figsize=(6.2 * len(cfg["setups"]), 5.4), squeeze=False)
    for ax, setup in zip(axes[0], cfg["setups"]):
        sel = [r for r in rows if (r["model"], r["machine"]) == (setup["model"], setup["machine"])]
        misfits = []
        for s in cfg["systems"] + [ALL_CKPT]:
            pts = [(int(r["gpus"]), num(r["tokens_per_s"])) for r in sel if r["system"] == s]
            ok = [(g, v) for g, v in pts if v is not None]
            misfits += [f"{SYSTEM_LABEL.get(s, s)} on {g} GPU: {r['misfit']}" for r in sel
                        if r["system"] == s and num(r["tokens_per_s"]) is None for g in [int(r["gpus"])]]
            if not ok:
                continue
            if s == ALL_CKPT:
                ax.plot(*zip(*ok), linestyle="--", marker="o", markerfacecolor="white",
                        color=SYSTEM_COLOUR["protrain"], label="ProTrain, search limited to all-CKPT")
            else:
                ax.plot(*zip(*ok), marker=SYSTEM_MARKER[s], color=SYSTEM_COLOUR[s], label=SYSTEM_LABEL[s])
        pt = {int(r["gpus"]): num(r["tokens_per_s"]) for r in sel if r["system"] == "protrain"}
        if pt.get(1):
            ax.plot(gpus, [pt[1] * g for g in gpus], linestyle=":", color="#888888",
                    label="linear from ProTrain's 1 GPU")
            g4 = max(gpus)
            if pt.get(g4):
                ax.annotate(f"ProTrain {pt[g4] / pt[1]:.2f}× its 1-GPU", (g4, pt[g4]), xytext=(-10, 6),
                            textcoords="offset points", ha="right", va="bottom", fontsize=8,
                            color=SYSTEM_COLOUR["protrain"])
            for pub in cfg["published"]:
                if (pub["model"], pub["machine"]) == (setup["model"], setup["machine"]):
                    ax.plot(g4, pt[1] * pub["speedup_4_over_1"], marker="*", markersize=13, color="black",
                            linestyle="none", label=f"paper: ProTrain {pub['speedup_4_over_1']}× its 1-GPU")
        ax.set_xticks(gpus, [str(g) for g in gpus])
        ax.set_xlim(min(gpus) - 0.25, max(gpus) + 0.25)
        ax.set_xlabel("data-parallel GPUs")
        ax.set_ylabel("throughput (tokens/s, all GPUs)")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper left")
        ax.set_title(f"{setup['model']} on the {MACHINE_LABEL.get(setup['machine'], setup['machine'])}", fontsize=10)
        if misfits:
            ax.text(0.99, 0.02, "does not fit:\n" + "\n".join(misfits), transform=ax.transAxes, ha="right",
                    va="bottom", fontsize=7, color="#444444")
    fig.suptitle("Data-parallel scaling, every system at its best knobs and batch per GPU count "
                 "(protwin, simulated)", fontsize=11)
    fig.tight_layout()
    save(fig, out)


if __name__ == "__main__":
    main()
