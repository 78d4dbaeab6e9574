#!/usr/bin/python3
"""Predicted vs measured iteration time of the calibration plans (twin-accuracy).

One panel per `protwin calibrate` result: every plan's measured iteration (LibTorch runtime on the
emulated device) against the simulator's prediction from the profiled machine, with the y = x line
and ±5 % / ±10 % bands. Filled circles: the profile's prediction (nothing fitted); crosses: the
prediction after `--fit` for the held-out (odd-numbered) cases only, since the even ones trained the
fit (a thin line joins each to the same case's circle). Circles are numbered; the key beside each
panel names the plans.

Reads only calibration.json files (`protwin calibrate -o DIR`); the per-case timelines that
plots/calibration.py also draws are not needed.

usage: twin_accuracy.py DIR/calibration.json [...] --out PREFIX   (writes PREFIX.png/.svg)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cli import results_and_out  # noqa: E402
from _style import plt, save  # noqa: E402

BEFORE, AFTER = "#4c72b0", "#c44e52"


def numbers(ax, points, colour, span):
    """Numbers the points below them; a point closer than 3 % of the axis span to any point of a
    group joins it, and the group gets one label ("0,10,11") under its middle."""
    groups = []
    for i, (x, y) in points:
        near = [g for g in groups if any(abs(gx - x) < 0.03 * span and abs(gy - y) < 0.03 * span for _, gx, gy in g)]
        merged = [(i, x, y)] + [p for g in near for p in g]
        groups = [g for g in groups if g not in near] + [merged]
    for g in groups:
        x = sum(p[1] for p in g) / len(g)
        y = min(p[2] for p in g)
        ax.annotate(",".join(str(i) for i, _, _ in sorted(g)), (x, y), xytext=(0, -11), textcoords="offset points",
                    fontsize=7, color=colour, ha="center")


def panel(ax, res):
    cases = [c for c in res["cases"] if "measured_s" in c]
    meas = [1e3 * c["measured_s"] for c in cases]
    pred = [1e3 * c["predicted_s"] for c in cases]
    held = [(i, c) for i, c in enumerate(cases) if i % 2 == 1 and "fitted_predicted_s" in c]
    allv = meas + pred + [1e3 * c["fitted_predicted_s"] for _, c in held]
    lo, hi = min(allv) * 0.85, max(allv) * 1.08
    xs = [lo, hi]
    ax.fill_between(xs, [x * 0.9 for x in xs], [x * 1.1 for x in xs], color="grey", alpha=0.12, label="±10 %")
    ax.fill_between(xs, [x * 0.95 for x in xs], [x * 1.05 for x in xs], color="grey", alpha=0.22, label="±5 %")
    ax.plot(xs, xs, "k--", linewidth=1, label="y = x")
    ax.scatter(meas, pred, color=BEFORE, s=28, zorder=3, label="profile's prediction (no fit)")
    numbers(ax, list(enumerate(zip(meas, pred))), BEFORE, hi - lo)
    if held:
        ax.scatter([1e3 * c["measured_s"] for _, c in held], [1e3 * c["fitted_predicted_s"] for _, c in held],
                   marker="x", color=AFTER, s=36, zorder=3, label="after --fit, held-out cases")
        for i, c in held:  # joins a held-out case's prediction before and after the fit
            ax.plot([1e3 * c["measured_s"]] * 2, [pred[i], 1e3 * c["fitted_predicted_s"]], color=AFTER, linewidth=0.6,
                    alpha=0.6)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured iteration (ms, runtime)")
    ax.set_ylabel("predicted iteration (ms, simulator)")
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7.5, loc="upper left")
    title = "%s, batch %d × seq %d, link %.2f GB/s, %d plans\nprofile only: MAPE %.1f %%, max %.1f %%, Spearman %.2f" % (
        res["model"], res["batch"], res["seq"], res["link_GBps"], len(cases), 100 * res["iteration_time_mape"],
        100 * res["iteration_time_max_error"], res["spearman"])
    fit = res.get("fit", {}).get("held_out")
    if fit:
        title += "\nheld-out cases after --fit: MAPE %.1f %%, max %.1f %%" % (100 * fit["iteration_time_mape"],
                                                                      100 * fit["iteration_time_max_error"])
    ax.set_title(title, fontsize=8.5)
    key = "\n".join("%2d  %s (%+.0f %%)" % (i, c["label"].replace("hand: ", ""),
                                            100 * (c["predicted_s"] / c["measured_s"] - 1))
                    for i, c in enumerate(cases))
    ax.text(1.03, 1.0, "plans (error of the\nprofile's prediction)\n\n" + key, transform=ax.transAxes, va="top",
            fontsize=7, family="monospace")


def main():
    results, out = results_and_out(__doc__, ("model", "batch", "seq", "link_GBps", "cases", "iteration_time_mape",
                                             "iteration_time_max_error", "spearman"),
                                   "`protwin calibrate` calibration.json", many=True)
    fig, axes = plt.subplots(1, len(results), figsize=(8.2 * len(results), 6.2), squeeze=False)
    for ax, res in zip(axes[0], results):
        panel(ax, res)
    fig.suptitle("Does the twin predict the runtime? Simulator vs LibTorch runtime on the emulated device "
                 "(protwin calibrate; targets: MAPE ≤ 5 %, max ≤ 10 %)", fontsize=10)
    fig.tight_layout()
    save(fig, out)


if __name__ == "__main__":
    main()
