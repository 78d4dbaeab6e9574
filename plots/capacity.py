#!/usr/bin/python3
"""Largest trainable GPT-2-family model per system on 1 and 4 GPUs of each server (capacity).

Grouped bars: one group per (server, GPU count), one bar per system, height = parameters of the
largest model whose batch-1 plan fits GPU and host memory; the label at a bar's foot names the memory
that stops one more layer. The paper's published capacities are drawn as black diamonds.

Reads only the experiment's config.json and results/capacity.csv (written by tabulate.py).

usage: capacity.py CONFIG.json RESULTS_DIR --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import load_table  # noqa: E402
from _style import MACHINE_LABEL, SYSTEM_COLOUR, SYSTEM_LABEL, figure_args, plt, save  # noqa: E402

SHORT = {"host memory": "host", "GPU memory": "GPU", "gpu memory": "GPU", "gpu and host memory": "GPU and host",
         "gpu and host memory together": "GPU+host"}


def main():
    cfg, results, out = figure_args(__doc__)
    rows = load_table(results, "capacity.csv", "experiments/capacity/tabulate.py")
    setups = [(s["machine"], s["gpus"]) for s in cfg["setups"]]
    systems = cfg["systems"]
    fig, ax = plt.subplots(figsize=(10.5, 5.6))
    width = 0.8 / len(systems)
    x = np.arange(len(setups))
    top = 0.0
    for k, s in enumerate(systems):
        xs = x - 0.4 + width * (k + 0.5)
        for xi, (m, g) in zip(xs, setups):
            r = next(r for r in rows if (r["machine"], int(r["gpus"]), r["system"]) == (m, g, s))
            v = float(r["max_params_B"])
            top = max(top, v)
            ax.bar(xi, v, width, color=SYSTEM_COLOUR[s], label=SYSTEM_LABEL[s] if xi == xs[0] else None)
            # Inside the bar's top, or above it where a published diamond sits just under the top.
            pub = [p["max_params_B"] for p in cfg["published"]
                   if (p["machine"], p["gpus"], p["system"]) == (m, g, s)]
            if any(v - 4.0 < b < v for b in pub):
                ax.text(xi, v + 0.6, f"{v:.1f}", ha="center", va="bottom", fontsize=7.5, fontweight="bold")
            else:
                ax.text(xi, v - 0.8, f"{v:.1f}", ha="center", va="top", fontsize=7.5, color="white",
                        fontweight="bold")
            why = SHORT.get(r["next_layer_stopped_by"], r["next_layer_stopped_by"])
            if why:
                ax.text(xi, 1.0, f"limit: {why}", rotation=90, ha="center", va="bottom", fontsize=7,
                        color="white")
    first = True
    for pub in cfg["published"]:
        j = setups.index((pub["machine"], pub["gpus"]))
        xi = x[j] - 0.4 + width * (systems.index(pub["system"]) + 0.5)
        ax.plot(xi, pub["max_params_B"], marker="D", color="black", markersize=7, linestyle="none",
                label="paper (ProTrain, DeepSpeed on 1 × 3090)" if first else None)
        ax.annotate(f"paper {pub['max_params_B']:g}B", (xi, pub["max_params_B"]), xytext=(7, 0),
                    textcoords="offset points", fontsize=7.5, va="center",
                    bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))
        first = False
        top = max(top, pub["max_params_B"])
    ax.set_xticks(x, [f"{g} × {MACHINE_LABEL.get(m, m).replace(' server', '')}" for m, g in setups])
    ax.set_xlabel("server and data-parallel GPUs")
    ax.set_ylabel("largest trainable model (billion parameters)")
    ax.set_ylim(0, top * 1.2)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, ncol=2)
    ax.set_title("Largest GPT-2-family model (hidden 4096/8192, batch 1, seq 1024) each system can train "
                 "(protwin, simulated)", fontsize=10)
    fig.text(0.01, 0.01, "limit: what stops one more layer (protwin capacity's next_size.limited_by): host, GPU, "
             "or 'GPU+host' (each pool alone would suffice for some setting, none fits both)",
             fontsize=7.5, color="#444444")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(fig, out)


if __name__ == "__main__":
    main()
