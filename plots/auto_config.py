#!/usr/bin/python3
"""What ProTrain's search chooses on each server, and what hand-picked alternatives and the paper's
ablations cost against it (auto-config).

Top row (one panel per server): the chosen activation mode of every decoder layer (NONE / CKPT /
SWAP counts) per model, with the chosen batch, persistent chunks, chunk buffers and chunk size.
Bottom row: throughput of each alternative (one knob or the batch changed, the other server's
choice) and of each ablation (a new search with one ProTrain feature off) relative to the search's
choice, in %; "no fit" = over GPU memory, "n/a" = the change does not apply (out of the knob's
range or equal to the choice).

Reads only results/auto_config.json (written by experiments/auto-config/run.py).

usage: auto_config.py results/auto_config.json --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cli import results_and_out  # noqa: E402
from _style import MACHINE_LABEL, plt, save  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

MODES = [("layers_none", "NONE (kept)", "#55a868"), ("layers_ckpt", "CKPT (recomputed)", "#dd8452"),
         ("layers_swap", "SWAP (to host)", "#8172b3")]
ABLATION_LABEL = {"all-ckpt": "all-CKPT", "no-persist": "no persistent chunks",
                  "no-buffer-reuse": "no buffer reuse", "no-overlap": "no CPU-Adam overlap"}


def choices(ax, res, machine):
    rows = {r["model"]: r for r in res["rows"] if r["machine"] == machine and r["kind"] == "search"}
    models = res["models"]
    y = np.arange(len(models))
    for i, m in enumerate(models):
        r = rows.get(m)
        if not r or r.get("tokens_per_s") is None:
            ax.text(0.5, i, "does not fit", va="center", fontsize=8)
            continue
        left = 0
        for key, _, colour in MODES:
            n = r.get(key, 0)
            ax.barh(i, n, left=left, color=colour, height=0.65, edgecolor="white", linewidth=0.5)
            if n:
                ax.text(left + n / 2, i, str(n), ha="center", va="center", fontsize=7, color="white")
            left += n
        chunk = r["chunk_MiB"]
        chunk = "%g GiB" % (chunk / 1024) if chunk >= 1024 else "%d MiB" % chunk
        ax.text(left + 1, i, "batch %d, persist %d, buffers %d, chunk %s  → %s tok/s" % (
            r["batch"], r["n_persist"], r["n_buffer"], chunk, f"{r['tokens_per_s']:,.0f}"), va="center", fontsize=7.5)
    ax.set_yticks(y)
    ax.set_yticklabels(models, fontsize=8.5)
    ax.invert_yaxis()
    most = max((r["layers"] for r in rows.values() if r.get("layers")), default=1)
    ax.set_xlim(0, most * 2.6)
    ax.set_xlabel("decoder layers by activation mode (count)")
    ax.set_title("%d × %s: the search's choice" % (res["gpus"], MACHINE_LABEL.get(machine, machine)), fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def variants(res):
    out = [("alternative", a, a) for a in res["alternatives"]]
    out += [("ablation", a, "ablation: " + ABLATION_LABEL.get(a, a)) for a in res["ablations"]]
    return out


def heat(ax, res, machine, labels=True):
    rows = {(r["kind"], r["variant"], r["model"]): r for r in res["rows"] if r["machine"] == machine}
    var, models = variants(res), res["models"]
    grid = np.full((len(var), len(models)), np.nan)
    for i, (kind, v, _) in enumerate(var):
        for j, m in enumerate(models):
            r = rows.get((kind, v, m), {})
            if r.get("relative_to_search"):
                grid[i, j] = 100 * r["relative_to_search"]
                txt = "%.0f" % grid[i, j] if abs(grid[i, j] - 100) >= 0.5 else "%.1f" % grid[i, j]
            elif r.get("outcome", "").startswith("n/a"):
                txt = "="if "same as" in r["outcome"] else "n/a"
            elif r:
                txt = "no fit"
            else:
                txt = ""
            ax.text(j, i, txt, ha="center", va="center", fontsize=7.5,
                    color="black" if np.isnan(grid[i, j]) or 55 < grid[i, j] < 115 else "white")
    norm = TwoSlopeNorm(vmin=40, vcenter=100, vmax=110)
    img = ax.imshow(np.ma.masked_invalid(grid), cmap="RdYlGn", norm=norm, aspect="auto")
    ax.set_facecolor("#e8e8e8")
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models, fontsize=8, rotation=20)
    ax.set_yticks(range(len(var)))
    ax.set_yticklabels([lab for _, _, lab in var] if labels else [], fontsize=8)
    ax.axhline(len(res["alternatives"]) - 0.5, color="black", linewidth=1.2)
    ax.set_title("throughput vs the search's choice (%; > 100 = the alternative is faster)", fontsize=9)
    return img


def main():
    res, out = results_and_out(__doc__, ("machines", "models", "alternatives", "ablations", "rows", "gpus", "published"),
                               "results/auto_config.json of experiments/auto-config/run.py")
    n = len(res["machines"])
    fig = plt.figure(figsize=(7.6 * n, 10.8))
    gs = fig.add_gridspec(2, n + 1, height_ratios=[1, 1.9], width_ratios=[1] * n + [0.035],
                          left=0.13, right=0.94, top=0.89, bottom=0.09, hspace=0.22, wspace=0.2)
    for k, machine in enumerate(res["machines"]):
        choices(fig.add_subplot(gs[0, k]), res, machine)
        img = heat(fig.add_subplot(gs[1, k]), res, machine, labels=k == 0)
    cb = fig.colorbar(img, cax=fig.add_subplot(gs[1, n]))
    cb.set_label("throughput relative to the search's choice (%)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, _, c in MODES]
    fig.legend(handles, [l for _, l, _ in MODES], fontsize=8, loc="upper center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, 0.935))
    pub = res["published"]
    fig.suptitle("ProTrain's automatic configuration (protwin, simulated; %d GPUs, seq 1024)\n"
                 "Paper: %s on the 3090 server, all-CKPT costs %.2f× on average there; on the A100 server it %s."
                 % (res["gpus"], pub["rtx3090_choice"].split(" (")[0], pub["all_ckpt_cost_3090_mean"],
                    pub["a100_choice"]), fontsize=10)
    fig.text(0.5, 0.015, "Cells: throughput of the variant / throughput of the search's choice, in %.  "
             "'=' same setting as the search's choice;  'n/a' knob out of range for the model;  "
             "'no fit' over GPU memory.  Alternatives keep all other knobs; ablations search again.",
             ha="center", fontsize=8)
    save(fig, out)


if __name__ == "__main__":
    main()
