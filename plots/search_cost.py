#!/usr/bin/python3
"""Search and simulation cost against model size (search-cost).

Left: wall time of ProTrain's whole policy search in protwin (every batch, chunk size and knob
setting costed by the analytic model, the best ones simulated) per model and server; a hollow
marker is a model that fits nowhere on that server (the time to find that out). ProTrain's
published average search time is the dashed line. Right: one simulated iteration of the best plan,
with the project's target and Calculon's published cost per configuration.

Reads only results/search_cost.json (written by experiments/search-cost/run.py).

usage: search_cost.py results/search_cost.json --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cli import results_and_out  # noqa: E402
from _style import MACHINE_LABEL, plt, save  # noqa: E402

COLOUR = {"rtx3090-server": "#c44e52", "a100-server": "#4c72b0", "h200-server": "#55a868"}
MARKER = {"rtx3090-server": "o", "a100-server": "s", "h200-server": "^"}


NAMES = dict(MACHINE_LABEL, **{"h200-server": "H200-141GB server"})


def label(m):
    return "%d × %s" % (m["gpus"], NAMES.get(m["name"], m["name"]))


def model_axis(axis, rows):
    """Names the models on a top axis at their sizes; models of (almost) the same size share a tick."""
    ticks = []
    for x, name in sorted({(r["params"] / 1e9, r["model"]) for r in rows}):
        if ticks and x / ticks[-1][0] < 1.05:
            ticks[-1] = (ticks[-1][0], ticks[-1][1] + " / " + name)
        else:
            ticks.append((x, name))
    top = axis.secondary_xaxis("top")
    top.set_xticks([x for x, _ in ticks])
    top.set_xticklabels([n for _, n in ticks], rotation=60, fontsize=7, ha="left")
    top.minorticks_off()


def main():
    res, out = results_and_out(__doc__, ("machines", "models", "rows", "published", "summary"),
                               "results/search_cost.json of experiments/search-cost/run.py")
    pub = res["published"]
    fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(18, 6.2))
    for m in res["machines"]:
        rows = [r for r in res["rows"] if r["machine"] == m["name"]]
        c, mk = COLOUR.get(m["name"], "black"), MARKER.get(m["name"], "o")
        fit = [r for r in rows if r["fits"]]
        nofit = [r for r in rows if not r["fits"]]
        ax.plot([r["params"] / 1e9 for r in fit], [r["search_s"] for r in fit], marker=mk, color=c, linewidth=0.8)
        if nofit:
            ax.scatter([r["params"] / 1e9 for r in nofit], [r["nofit_process_wall_s"] for r in nofit], marker=mk,
                       facecolors="none", edgecolors=c, s=45, zorder=3)
        bx.plot([r["params"] / 1e9 for r in fit], [r["simulate_ms"] for r in fit], marker=mk, color=c, linewidth=0.8,
                label=label(m))
        cx.scatter([r["plan_ops"] for r in fit], [r["simulate_ms"] for r in fit], marker=mk, color=c)
    ax.scatter([], [], marker="o", facecolors="none", edgecolors="grey", label="fits nowhere: time to find out")
    ax.axhline(pub["protrain_search_s"], color="black", linestyle="--", linewidth=1,
               label="ProTrain's search, paper average (%.2f s)" % pub["protrain_search_s"])
    for axis, ylabel, title in (
            (ax, "search wall time (s, log scale)", "ProTrain policy search (all batches, chunk sizes, knobs)"),
            (bx, "one simulated iteration (ms, log scale)", "one discrete-event simulation of the best plan")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("model parameters (billions, log scale)")
        axis.set_ylabel(ylabel)
        axis.set_title(title, fontsize=10)
        axis.grid(which="both", alpha=0.25)
        model_axis(axis, res["rows"])
    for axis in (bx, cx):
        axis.axhline(pub["calculon_ms_per_config"], color="black", linestyle="--", linewidth=1,
                     label="Calculon, per configuration (%.2f ms, analytic)" % pub["calculon_ms_per_config"])
        axis.axhline(pub["target_simulate_ms"], color="grey", linestyle=":", linewidth=1.2,
                     label="REFERENCE §6 target (%.2f ms)" % pub["target_simulate_ms"])
    machines, names = bx.get_legend_handles_labels()
    k = len(res["machines"])
    fig.legend(machines[:k], names[:k], loc="lower center", ncol=k, fontsize=9, frameon=False)
    ax.legend(fontsize=7.5, loc="upper left")
    bx.legend(machines[k:], names[k:], fontsize=7.5, loc="upper left")
    cx.set_xscale("log")
    cx.set_yscale("log")
    cx.set_xlabel("operations in the simulated plan (log scale)")
    cx.set_ylabel("one simulated iteration (ms, log scale)")
    cx.set_title("the same simulations against the plan's size", fontsize=10)
    cx.grid(which="both", alpha=0.25)
    cx.legend(fontsize=7.5, loc="upper left")
    lo, hi = res["summary"]["load_average_1min"]
    fig.suptitle("What the twin costs (protwin bench policy; smallest of %d runs; this 2-core machine, "
                 "load average %.1f → %.1f during the run)" % (res["rows"][0]["repeats"], lo, hi), fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, out)


if __name__ == "__main__":
    main()
