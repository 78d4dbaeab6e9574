#!/usr/bin/python3
"""Throughput per system across nodes (multinode): one panel per model, grouped bars of tokens/s
(all GPUs) at 1, 2 and 4 nodes of the A100 server, each system at the same per-GPU batch; the label
over a baseline's bar is ProTrain's speed-up over it; where a system does not fit, its slot says so
with the memory that stops it.

Reads only the experiment's config.json and results/multinode.csv (written by run.py).

usage: multinode.py CONFIG.json RESULTS_DIR --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import load_table, num  # noqa: E402
from _style import SYSTEM_COLOUR, SYSTEM_LABEL, figure_args, plt, save  # noqa: E402


def main():
    cfg, results, out = figure_args(__doc__)
    rows = load_table(results, "multinode.csv", "experiments/multinode/run.py")
    systems = cfg["systems"]
    studies = cfg["studies"]
    fig, axes = plt.subplots(1, len(studies), figsize=(6.4 * len(studies), 5.2), squeeze=False)
    width = 0.8 / len(systems)
    for ax, study in zip(axes[0], studies):
        nodes = study["nodes"]
        for i, s in enumerate(systems):
            for j, n in enumerate(nodes):
                r = next((r for r in rows if (r["model"], int(r["nodes"]), r["system"]) == (study["model"], n, s)), None)
                v = num(r["tokens_per_s"]) if r else None
                x = j + (i - (len(systems) - 1) / 2) * width
                if v is None:
                    if r:
                        ax.text(x, 0, f" does not fit: {r['misfit']}", rotation=90, ha="center", va="bottom",
                                fontsize=7, color=SYSTEM_COLOUR[s])
                    continue
                ax.bar(x, v, width, color=SYSTEM_COLOUR[s], label=SYSTEM_LABEL[s])
                sp = num(r["protrain_speedup"])
                if sp:
                    ax.annotate(f"{sp:.2f}×", (x, v), xytext=(0, 2), textcoords="offset points", ha="center",
                                va="bottom", fontsize=7)
        handles, labels = ax.get_legend_handles_labels()
        seen = {}
        for h, l in zip(handles, labels):
            seen.setdefault(l, h)
        if seen:
            ax.legend(seen.values(), seen.keys(), fontsize=8, loc="upper left")
        ax.set_xticks(range(len(nodes)),
                      [f"{n} node{'s' if n > 1 else ''}\n{4 * n} GPUs, batch {cfg['batch_per_gpu'] * 4 * n}" for n in nodes])
        ax.set_xlim(-0.6, len(nodes) - 0.4)
        ax.set_ylabel("throughput (tokens/s, all GPUs)")
        ax.set_ylim(0, (ax.get_ylim()[1] or 1) * 1.15)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"{study['model']}, sequence {cfg['seq']}, batch {cfg['batch_per_gpu']} per GPU", fontsize=10)
    fig.suptitle("A100-80GB servers (4 GPUs each) over 100 Gb/s InfiniBand: every system at its best knobs "
                 "(protwin, simulated; labels: ProTrain's speed-up)", fontsize=10)
    fig.tight_layout()
    save(fig, out)


if __name__ == "__main__":
    main()
