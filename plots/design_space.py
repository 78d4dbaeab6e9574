#!/usr/bin/python3
"""Which system trains fastest where: one panel per model (rows) and host core count (columns), GPU
memory across, host link generation up; each cell coloured by the winning system (grey: no system
fits), its shade by the margin over the runner-up (pale: within 10 %).

usage: design_space.py RESULTS_DIR OUT_PREFIX --config CONFIG.json
reads RESULTS_DIR/winners.csv (experiments/design-space/run.py writes it)."""
import argparse
import csv
import json
import os
import sys

import matplotlib.colors as mcolors
from matplotlib.patches import Patch

from _style import SYSTEM_COLOUR, SYSTEM_LABEL, SYSTEM_ORDER, plt, save


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--config", required=True)
    a = ap.parse_args()
    with open(a.config) as f:
        cfg = json.load(f)
    path = os.path.join(a.results, "winners.csv")
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{path}: cannot read ({e}); run experiments/design-space/run.sh")
    mems, cores, models = cfg["gpu_memory_GiB"], cfg["host_cores"], cfg["models"]
    links = [v[0] for v in cfg["host_link"]["values"]]
    cell = {(r["model"], float(r["gpu_memory_GiB"]), float(r["h2d_pinned_GBps"]), int(r["host_cores"])): r
            for r in rows}
    fig, axes = plt.subplots(len(models), len(cores), figsize=(2.3 * len(cores) + 1.5, 1.55 * len(models) + 1.6),
                             sharex=True, sharey=True, squeeze=False)
    for i, model in enumerate(models):
        for j, c in enumerate(cores):
            ax = axes[i][j]
            img = []
            for link in links:
                line = []
                for mem in mems:
                    r = cell.get((model, float(mem), float(link), c))
                    if r is None:
                        sys.exit(f"{path}: no row for {model}, {mem} GiB, {link} GB/s, {c} cores")
                    if not r["winner"]:
                        line.append(mcolors.to_rgb("#d9d9d9"))
                        continue
                    rgb = mcolors.to_rgb(SYSTEM_COLOUR[r["winner"]])
                    margin = float(r["margin"]) if r["margin"] else 2.0
                    alpha = 0.35 if margin < 1.10 else 1.0
                    line.append(tuple(alpha * x + (1 - alpha) for x in rgb))
                img.append(line)
            ax.imshow(img, origin="lower", aspect="auto", interpolation="nearest")
            ax.set_xticks(range(len(mems)))
            ax.set_xticklabels([str(m) for m in mems], fontsize=6)
            ax.set_yticks(range(len(links)))
            ax.set_yticklabels(cfg["host_link"]["labels"], fontsize=6)
            if i == 0:
                ax.set_title(f"{c} host cores", fontsize=9)
            if j == 0:
                ax.set_ylabel(model, fontsize=9)
            if i == len(models) - 1:
                ax.set_xlabel("GPU memory (GiB)", fontsize=8)
    present = {r["winner"] for r in rows if r["winner"]}
    handles = [Patch(color=SYSTEM_COLOUR[s], label=SYSTEM_LABEL[s]) for s in SYSTEM_ORDER if s in present]
    handles += [Patch(color="#d9d9d9", label="no system fits"),
                Patch(facecolor="white", edgecolor="black", label="pale: winner within 10 % of the runner-up")]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
    n = len(rows) * len(SYSTEM_ORDER)
    fig.suptitle(f"Fastest system per point ({n} searches: {len(models)} models x {len(mems)} GPU memories x "
                 f"{len(links)} host links x {len(cores)} core counts x {len(SYSTEM_ORDER)} systems)\n"
                 f"{cfg['machine']}, {cfg['gpus']} GPU, batch {cfg['batch']}, simulated", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    save(fig, a.out)


if __name__ == "__main__":
    main()
