#!/usr/bin/python3
"""Largest trainable model against sequence length on one GPU (long-sequence): one panel per
machine, one line per system, solid with eager attention (as the papers' systems ran), dashed with
FlashAttention; each point is `protwin capacity --seq S` (GPT-2 ladder, batch 1). The label at a
system's longest eager point names what stops one layer more there. A last panel shows ProTrain's
activation policy for one fixed model as the sequence grows: its SWAP, CKPT and NONE layers.

Reads only the experiment's config.json and results/long_sequence.csv and results/decisions.csv
(written by run.py).

usage: long_sequence.py CONFIG.json RESULTS_DIR --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import load_table, num  # noqa: E402
from _style import MACHINE_LABEL, SYSTEM_COLOUR, SYSTEM_LABEL, SYSTEM_MARKER, figure_args, plt, save  # noqa: E402

MODE_COLOUR = {"n_swap": "#dd8452", "n_checkpoint": "#8c8c8c", "n_none": "#64b5cd"}
MODE_LABEL = {"n_swap": "SWAP layers", "n_checkpoint": "CKPT layers", "n_none": "NONE layers (kept)"}


def capacity_panel(ax, rows, cfg, machine):
    runs = [run for run in cfg["runs"] if run["machine"] == machine]
    seqs = sorted({q for run in runs for q in run["seqs"]})
    for run in runs:
        att = run["attention"]
        for s in cfg["systems"]:
            pts = sorted((int(r["seq"]), num(r["max_params_B"])) for r in rows
                         if (r["machine"], r["attention"], r["system"]) == (machine, att, s))
            if not pts:
                continue
            # ProTrain drawn larger: where Colossal-AI reaches the same size it sits on top.
            ax.plot(*zip(*pts), linestyle="-" if att == "eager" else "--", marker=SYSTEM_MARKER[s],
                    markersize=9 if s == "protrain" else 5, color=SYSTEM_COLOUR[s],
                    markerfacecolor=SYSTEM_COLOUR[s] if att == "eager" else "white", label=f"{SYSTEM_LABEL[s]}, {att}")
            if att == "eager":
                last = next(r for r in rows if (r["machine"], r["attention"], r["system"], int(r["seq"])) ==
                            (machine, att, s, pts[-1][0]))
                ax.annotate(last["next_layer_limited_by"] or "", pts[-1], xytext=(4, 0), textcoords="offset points",
                            fontsize=6, color=SYSTEM_COLOUR[s], va="center")
    ax.set_xticks(seqs, [str(s) for s in seqs], fontsize=7)
    ax.set_xlim(0, max(seqs) * 1.45)
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("largest trainable model (billions of parameters)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="lower left", ncol=2)
    ax.set_title(f"one GPU of the {MACHINE_LABEL.get(machine, machine)}, batch 1", fontsize=9)


def decisions_panel(ax, decisions, cfg):
    d = cfg["decisions"]
    labels, x = [], 0
    for att in d["attention"]:
        for seq in d["seqs"]:
            r = next((r for r in decisions if (r["attention"], int(r["seq"])) == (att, seq)), None)
            if r is None:
                continue
            bottom = 0
            for k in ("n_swap", "n_checkpoint", "n_none"):
                v = int(r[k])
                ax.bar(x, v, bottom=bottom, color=MODE_COLOUR[k], label=MODE_LABEL[k] if x == 0 else None)
                bottom += v
            ax.annotate(f"{float(r['tokens_per_s']):.0f}", (x, bottom), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=6.5)
            labels.append(f"{seq}\n{att}")
            x += 1
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel("decoder layers")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
    ax.legend(fontsize=7, loc="upper center", ncol=3)
    ax.set_title(f"ProTrain's activation policy, hidden 4096 x 48 layers on one A100 (label: tokens/s)", fontsize=8.5)


def main():
    cfg, results, out = figure_args(__doc__)
    rows = load_table(results, "long_sequence.csv", "experiments/long-sequence/run.py")
    decisions = load_table(results, "decisions.csv", "experiments/long-sequence/run.py")
    machines = list(dict.fromkeys(run["machine"] for run in cfg["runs"]))
    fig, axes = plt.subplots(1, len(machines) + 1, figsize=(6.0 * (len(machines) + 1), 5.4))
    for ax, m in zip(axes, machines):
        capacity_panel(ax, rows, cfg, m)
    decisions_panel(axes[-1], decisions, cfg)
    fig.suptitle("Long sequences: largest trainable GPT-2-family model per system, and ProTrain's choices "
                 "(protwin, simulated)", fontsize=10)
    fig.tight_layout()
    save(fig, out)


if __name__ == "__main__":
    main()
