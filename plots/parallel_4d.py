#!/usr/bin/python3
"""Simulated TFLOPS per GPU of every 4D-parallel layout that fits (Fujii et al.'s 80 % rule), per
model, cluster and GPU count, with the fastest layout of each size highlighted.

Reads experiments/parallel-4d/results/summary.json and the search files it names (written by
that experiment's run.py from `protwin search-4d --json`). One panel per (model, cluster); x: the
GPU count; y: model-flops TFLOPS per GPU; each dot one layout, coloured by its model-parallel
degree TP*CP*PP, shaped by its micro-batch size; a star and label mark the best layout.

usage: parallel_4d.py summary.json --out PREFIX   (writes PREFIX.png and PREFIX.svg)
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _style import load_json, plt, save  # noqa: E402

MBS_MARKER = {1: "o", 2: "s", 4: "^", 8: "D", 16: "v"}
MP_DEGREES = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def colour(mp):
    return plt.get_cmap("tab10")(int(math.log2(mp)) % 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    s = load_json(a.summary, ("config", "searches"), "experiments/parallel-4d run.py summary")
    here = os.path.dirname(os.path.abspath(a.summary))
    cfg = s["config"]
    models, clusters, sizes = cfg["models"], cfg["clusters"], cfg["gpus"]
    fig, axes = plt.subplots(len(models), len(clusters), figsize=(6.5 * len(clusters), 4.6 * len(models)),
                             squeeze=False)
    seen_mp, seen_mbs = set(), set()
    for i, model in enumerate(models):
        for j, cl in enumerate(clusters):
            ax = axes[i][j]
            runs = [x for x in s["searches"] if x["model"] == model and x["machine"] == cl["machine"]]
            ymax = 0
            for x in runs:
                r = load_json(os.path.join(here, x["file"]), ("configurations",), "`protwin search-4d --json` output")
                pos = sizes.index(x["gpus"])
                rows = r["configurations"]
                for k, c in enumerate(rows):
                    mp = c["tp"] * c["cp"] * c["pp"]
                    seen_mp.add(mp)
                    seen_mbs.add(c["mbs"])
                    jitter = ((k * 0.618) % 1 - 0.5) * 0.5
                    ax.scatter(pos + jitter, c["tflops_per_gpu"], s=16, color=colour(mp),
                               marker=MBS_MARKER.get(c["mbs"], "x"), alpha=0.75, linewidths=0)
                    ymax = max(ymax, c["tflops_per_gpu"])
                if "best" in x:
                    b = x["best"]
                    ax.scatter(pos, b["tflops_per_gpu"], s=150, marker="*", color="#d62728", edgecolors="black",
                               linewidths=0.6, zorder=5)
                    ax.annotate(f"t{b['tp']}c{b['cp']}p{b['pp']}\nd{b['dp']} b{b['mbs']}", (pos, b["tflops_per_gpu"]),
                                xytext=(0, 9), textcoords="offset points", ha="center", fontsize=7)
                else:
                    ax.text(pos, 0.02, "none fits", rotation=90, ha="center", va="bottom", fontsize=7,
                            transform=ax.get_xaxis_transform(), color="#606060")
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels([str(g) for g in sizes])
            ax.set_xlim(-0.6, len(sizes) - 0.4)
            ax.set_ylim(0, ymax * 1.25 if ymax > 0 else 1)
            ax.set_xlabel("GPUs")
            ax.set_ylabel("simulated TFLOPS per GPU (model flops)")
            ax.set_title(f"{model} on {cl['label']}", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
            if ymax == 0:
                ax.set_yticks([])
                ax.text(0.5, 0.5, "no layout fits under 80 % of GPU memory\nat any size up to 256 GPUs",
                        ha="center", va="center", transform=ax.transAxes, fontsize=10, color="#606060")
    handles = [plt.Line2D([], [], ls="", marker="o", color=colour(m), label=f"TP\u00b7CP\u00b7PP = {m}")
               for m in MP_DEGREES if m in seen_mp]
    handles += [plt.Line2D([], [], ls="", marker=MBS_MARKER.get(b, "x"), color="#505050", label=f"MBS {b}")
                for b in sorted(seen_mbs)]
    handles.append(plt.Line2D([], [], ls="", marker="*", markersize=12, color="#d62728", markeredgecolor="black",
                              label="fastest layout (t=TP c=CP p=PP d=DP b=MBS)"))
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 7), fontsize=8, frameon=False)
    fig.suptitle(f"Every layout that fits (Fujii et al. 80 % rule), simulated by protwin: seq {cfg['seq']}, "
                 f"GBS {cfg['gbs']}, {cfg['dtype']}, recompute {cfg['recompute']}", y=0.005, fontsize=10)
    fig.tight_layout(rect=(0, 0.02, 1, 0.93))
    save(fig, a.out)


if __name__ == "__main__":
    main()
