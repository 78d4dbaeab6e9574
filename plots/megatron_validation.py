#!/usr/bin/python3
"""Simulated against published throughput of Megatron-LM (Narayanan et al. 2021, TFLOPS/GPU) and
MosaicML llm-foundry (MFU) runs, with the +-15 % criterion band.

Reads experiments/megatron-validation/results/comparison.json (written by that experiment's
run.py): {"tolerance": 0.15, "rows": [{"set": "megatron"|"mosaicml", "name", "machine",
"metric", "published", "simulated", "rel_err", "within"}, ...]}.

usage: megatron_validation.py comparison.json --out PREFIX   (writes PREFIX.png and PREFIX.svg)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _style import load_json, plt, save  # noqa: E402

PUBLISHED = "#7f7f7f"
SIMULATED = {"dgx-a100": "#4c72b0", "abci-a100": "#55a868", "hgx-h100": "#c44e52"}
MACHINE = {"dgx-a100": "DGX A100 80GB", "abci-a100": "A100 40GB node", "hgx-h100": "HGX H100 80GB"}


def bars(ax, rows, ylabel, title, tol):
    x = range(len(rows))
    w = 0.38
    pub = [r["published"] for r in rows]
    sim = [r["simulated"] if r["simulated"] is not None else 0 for r in rows]
    ax.bar([i - w / 2 for i in x], pub, w, color=PUBLISHED, label="published")
    ax.bar([i + w / 2 for i in x], sim, w, color=[SIMULATED.get(r["machine"], "#8172b3") for r in rows],
           label="simulated (protwin)")
    # The +-tol band around each published value.
    for i, p in enumerate(pub):
        ax.plot([i - w, i + w], [p * (1 - tol)] * 2, color="black", lw=0.8, ls=":")
        ax.plot([i - w, i + w], [p * (1 + tol)] * 2, color="black", lw=0.8, ls=":")
    for i, r in enumerate(rows):
        if r["simulated"] is None:
            ax.text(i + w / 2, 1, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
            continue
        mark = "" if r["within"] else " \u2717"
        ax.text(i + w / 2, sim[i], f"{100 * r['rel_err']:+.0f}%{mark}", ha="center", va="bottom",
                fontsize=7, rotation=90, color="black" if r["within"] else "#b00000")
    ax.set_xticks(list(x))
    ax.set_xticklabels([r["name"] for r in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    top = max(pub + sim) * 1.35
    ax.set_ylim(0, top)
    ax.grid(axis="y", alpha=0.3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("comparison")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    c = load_json(a.comparison, ("tolerance", "rows"), "experiments/megatron-validation run.py output")
    tol = c["tolerance"]
    meg = [r for r in c["rows"] if r["set"] == "megatron"]
    mos = [r for r in c["rows"] if r["set"] == "mosaicml"]
    if not meg and not mos:
        sys.exit(f"{a.comparison}: no rows")
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2), gridspec_kw={"width_ratios": [len(meg) or 1, len(mos) or 1]})
    if meg:
        bars(axes[0], meg, "TFLOPS per GPU (Narayanan et al.'s formula, incl. recompute)",
             "Megatron-LM, Narayanan et al. 2021 Table 1 (fp16, full recompute, Selene DGX A100)", tol)
    if mos:
        bars(axes[1], [dict(r, published=100 * r["published"],
                            simulated=None if r["simulated"] is None else 100 * r["simulated"]) for r in mos],
             "MFU (%) (MosaicML's formula)", "MosaicML llm-foundry MPT benchmarks (bf16, seq 2048)", tol)
    from matplotlib.patches import Patch
    handles = [Patch(color=PUBLISHED, label="published")] + \
              [Patch(color=col, label=f"simulated, {MACHINE[m]}") for m, col in SIMULATED.items()
               if any(r["machine"] == m for r in c["rows"])]
    handles.append(plt.Line2D([], [], color="black", ls=":", lw=0.8, label=f"published \u00b1{100 * tol:.0f} %"))
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9, frameon=False)
    n_in = sum(1 for r in c["rows"] if r["within"])
    fig.suptitle(f"protwin simulate-4d vs published runs: {n_in} of {len(c['rows'])} within \u00b1{100 * tol:.0f} % "
                 "(labels: simulated vs published, \u2717 = miss)", y=0.02, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.93))
    save(fig, a.out)


if __name__ == "__main__":
    main()
