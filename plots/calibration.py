#!/usr/bin/env python3
"""Plot of `protwin calibrate`: predicted vs measured iteration time (with y = x) and one plan's
simulated and measured timelines stacked (one row per stream).

usage: plots/calibration.py calibration.json [-o calibration.png]
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STREAMS = ["compute", "h2d", "d2h", "cpu_optim"]
COLORS = {"forward": "#4c72b0", "backward": "#dd8452", "recompute": "#c44e52", "h2d": "#55a868",
          "d2h": "#8172b3", "adam_cpu": "#937860", "adam_device": "#da8bc3"}


def timeline(ax, report_path, title):
    with open(report_path) as f:
        rep = json.load(f)
    for op in rep["ops"]:
        if op["stream"] not in STREAMS or op["end_ns"] <= op["start_ns"]:
            continue
        y = STREAMS.index(op["stream"])
        ax.barh(y, (op["end_ns"] - op["start_ns"]) * 1e-9, left=op["start_ns"] * 1e-9, height=0.7,
                color=COLORS.get(op["kind"], "#999999"), edgecolor="none")
    ax.set_yticks(range(len(STREAMS)))
    ax.set_yticklabels(STREAMS)
    ax.invert_yaxis()
    ax.set_title("%s: iteration %.3f s" % (title, rep["iteration_ns"] * 1e-9), fontsize=9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("-o", "--output", default=None)
    a = ap.parse_args()
    with open(a.results) as f:
        res = json.load(f)
    out = a.output or os.path.splitext(a.results)[0] + ".png"
    cases = [c for c in res["cases"] if "measured_s" in c]
    fig = plt.figure(figsize=(12, 5.5))
    ax = fig.add_subplot(1, 2, 1)
    p = [c["predicted_s"] for c in cases]
    m = [c["measured_s"] for c in cases]
    ax.scatter(m, p, label="profile (before fit)", zorder=3)
    if cases and "fitted_predicted_s" in cases[0]:
        ax.scatter(m, [c["fitted_predicted_s"] for c in cases], marker="x", label="after --fit", zorder=3)
    lo, hi = min(p + m) * 0.9, max(p + m) * 1.1
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
    ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="grey", alpha=0.15, label="±10 %")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured iteration (s)")
    ax.set_ylabel("predicted iteration (s)")
    ax.set_title("%s, batch %d: MAPE %.1f %%, Spearman %.2f" % (res["model"], res["batch"],
                 100 * res["iteration_time_mape"], res["spearman"]), fontsize=9)
    ax.legend(fontsize=8)
    k = res.get("timeline_case", 0)
    c = res["cases"][k]
    if "measured_s" in c:
        axs = fig.add_subplot(2, 2, 2)
        timeline(axs, c["simulated_report"], "simulated, case %d (%s)" % (k, c["label"]))
        axm = fig.add_subplot(2, 2, 4, sharex=axs)
        timeline(axm, c["measured_report"], "measured, case %d" % k)
        axm.set_xlabel("time in the iteration (s)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
