#!/usr/bin/python3
"""Heat map of estimated per-GPU memory over (TP*CP*PP, MBS), in Fujii et al.'s colours.

Reads only the JSON written by `protwin estimate-search ... --all --json` (one file per model and
GPU) and writes one figure with a panel per file (rows: models, columns: GPU memory sizes).

A cell shows the MINIMUM estimated total (GiB) over all feasible layouts with that model-parallel
size TP*CP*PP and that micro-batch size (so DP = GPUs / (TP*CP*PP) is the same in the whole
column); the small line under it names the layout that attains it. Colours follow the authors'
optimal_setting_search.py: green <= 0.8*M, yellow <= M, red > M (M = nominal GPU memory, compared
with GiB as they do); grey = no feasible layout.

usage: memory_heatmap.py RESULT.json [RESULT.json ...] --out PREFIX   (writes PREFIX.png/.svg)
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
import numpy as np  # noqa: E402

COLOURS = ["lightgreen", "khaki", "lightcoral"]  # the authors' palette
NONE_COLOUR = "#e0e0e0"


def load(path):
    with open(path) as f:
        r = json.load(f)
    for key in ("model", "gpu_memory_GB", "gpus", "configurations"):
        if key not in r:
            sys.exit(f"{path}: missing '{key}' (expected `protwin estimate-search --all --json`)")
    r["_path"] = path
    return r


def cell_minima(result):
    """{(mp, mbs): (total_GiB, row)} with the smallest total per cell."""
    best = {}
    for row in result["configurations"]:
        if row.get("total_GiB") is None:
            continue
        key = (row["tp"] * row["cp"] * row["pp"], row["mbs"])
        if key not in best or row["total_GiB"] < best[key][0]:
            best[key] = (row["total_GiB"], row)
    return best


def draw(ax, result):
    mem = float(result["gpu_memory_GB"])
    best = cell_minima(result)
    mps = sorted({k[0] for k in best})
    mbss = sorted({k[1] for k in best})
    level = np.full((len(mbss), len(mps)), np.nan)
    for (mp, mbs), (total, row) in best.items():
        i, j = mbss.index(mbs), mps.index(mp)
        level[i, j] = 0 if total <= 0.8 * mem else 1 if total <= mem else 2
        ax.text(j, i - 0.12, f"{total:.1f}", ha="center", va="center", fontsize=7.5)
        ax.text(j, i + 0.25, f"t{row['tp']}c{row['cp']}p{row['pp']}", ha="center", va="center",
                fontsize=5.5, color="#333333")
    ax.set_facecolor(NONE_COLOUR)
    ax.imshow(np.ma.masked_invalid(level), cmap=ListedColormap(COLOURS), vmin=0, vmax=2,
              aspect="auto", origin="lower")
    ax.set_xticks(range(len(mps)), [str(m) for m in mps])
    ax.set_yticks(range(len(mbss)), [str(b) for b in mbss])
    ax.set_xlabel("model-parallel size TP·CP·PP")
    ax.set_ylabel("micro-batch size (MBS)")
    ax.set_title(f"{result['model']}, {mem:g} GB GPUs ({result['gpus']} GPUs, "
                 f"seq {result['seq']}, GBS {result['gbs']})", fontsize=9)
    ax.set_xticks(np.arange(-0.5, len(mps)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(mbss)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="estimate-search --all --json outputs")
    p.add_argument("--out", required=True, help="output prefix (writes .png and .svg)")
    args = p.parse_args()
    results = [load(path) for path in args.results]
    models = list(dict.fromkeys(r["model"] for r in results))
    mems = sorted({float(r["gpu_memory_GB"]) for r in results})
    fig, axes = plt.subplots(len(models), len(mems), figsize=(6.2 * len(mems), 4.6 * len(models)),
                             squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    for r in results:
        ax = axes[models.index(r["model"])][mems.index(float(r["gpu_memory_GB"]))]
        ax.set_visible(True)
        draw(ax, r)
    legend = [Patch(facecolor=COLOURS[0], label="≤ 0.8 × GPU memory (safe, the authors' rule)"),
              Patch(facecolor=COLOURS[1], label="≤ GPU memory"),
              Patch(facecolor=COLOURS[2], label="> GPU memory"),
              Patch(facecolor=NONE_COLOUR, label="no feasible layout")]
    fig.legend(handles=legend, loc="lower center", ncol=4, frameon=False)
    fig.suptitle("Estimated per-GPU memory (GiB), Fujii et al. 4D-parallel estimator; "
                 "cell = minimum over TP, CP, PP with that product", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    for ext in ("png", "svg"):
        fig.savefig(f"{args.out}.{ext}", dpi=150)
    print(f"wrote {args.out}.png and {args.out}.svg")


if __name__ == "__main__":
    main()
