#!/usr/bin/python3
"""A `protwin sweep` result: best-policy tokens/s against the first axis, one line per value of the
second axis (and per system when the sweep has several). With --knobs, the chosen policy instead:
n_persist, n_buffer, n_swap, n_checkpoint and the batch size against the first axis.

Reads only the sweep JSON (`protwin sweep ... -o results.json`). The x values of a linked axis are
its first key's values; --x-labels names them instead (e.g. "PCIe 3,PCIe 4,PCIe 5").

Series that are identical everywhere are drawn once with their labels joined. --compare draws a
second sweep of the same grid dashed, where it differs (e.g. a cross-check of the search's picks).

usage: sweep.py results.json --out PREFIX [--knobs] [--x-labels A,B,...] [--x-title T]
                [--series V1,V2,...] [--compare other.json --compare-label TEXT] [--title T]
                (writes PREFIX.png/.svg)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _style import MACHINE_LABEL, SYSTEM_LABEL, SYSTEM_MARKER, load_json, plt, save  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

# Unit of a machine field from its key's suffix (every machine number carries one).
UNITS = [("_GBps", "GB/s"), ("_tflops", "TFLOPS"), ("_us", "µs"), ("_bytes", "bytes"),
         ("_per_s", "per s"), ("cores", "cores"), ("count", "GPUs")]
KNOBS = [("n_persist", "persistent chunks (n_persist)"), ("n_buffer", "chunk buffers (n_buffer)"),
         ("n_swap", "swapped layers (n_swap)"), ("n_checkpoint", "checkpointed layers (n_checkpoint)"),
         ("swap_spacing", "layers between swapped layers\n(swap_spacing, derived)"), ("batch", "micro-batch per GPU")]


def axis_label(axis):
    key = axis["keys"][0]
    unit = next((u for suffix, u in UNITS if key.endswith(suffix)), "")
    label = key + (f" ({unit})" if unit else "")
    if len(axis["keys"]) > 1:
        label += f"\n(+{len(axis['keys']) - 1} linked field{'s' if len(axis['keys']) > 2 else ''})"
    return label


def first_key_value(v):
    return v[0] if isinstance(v, list) else v


def series(res, only):
    """[(system, value index along axis 1 or None, label)] in a stable order."""
    systems = list(dict.fromkeys(p["system"] for p in res["points"]))
    axes = res["axes"]
    out = []
    for s in systems:
        if len(axes) < 2:
            out.append((s, None, SYSTEM_LABEL.get(s, s)))
            continue
        for i, lab in enumerate(axes[1]["labels"]):
            if only and lab not in only:
                continue
            name = f"{axes[1]['keys'][0].split('.')[-1]} = {lab}"
            out.append((s, i, name if len(systems) == 1 else f"{SYSTEM_LABEL.get(s, s)}, {name}"))
    return out


def points_of(res, system, j):
    """The points of one series, by the index along axis 0 (other axes beyond 1 must be 1 long)."""
    out = {}
    for p in res["points"]:
        if p["system"] != system or (j is not None and p["index"][1] != j):
            continue
        out[p["index"][0]] = p
    return out


def value(p, key):
    """A result of one point: top-level (tokens_per_s, batch) or a knob; None when nothing fits."""
    if p.get("tokens_per_s") is None:
        return None
    return p[key] if key in p else p["knobs"][key]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--out", required=True, help="output prefix (writes PREFIX.png and PREFIX.svg)")
    ap.add_argument("--knobs", action="store_true", help="plot the chosen knobs instead of tokens/s")
    ap.add_argument("--x-labels", help="comma-separated names of the first axis's values")
    ap.add_argument("--x-title", help="x-axis title (default: the first axis's key and unit)")
    ap.add_argument("--series", help="comma-separated second-axis values to draw (as written in --set)")
    ap.add_argument("--compare", help="a second sweep JSON of the same grid, drawn dashed (e.g. a cross-check)")
    ap.add_argument("--compare-label", default="compared", help="legend suffix of the --compare lines")
    ap.add_argument("--title")
    a = ap.parse_args()
    res = load_json(a.results, ["model", "machine", "gpus", "axes", "points"], "a protwin sweep JSON")
    axes = res["axes"]
    if not axes:
        sys.exit(f"{a.results}: the sweep has no axis to plot against")
    for k, ax in enumerate(axes[2:], start=2):
        if len(ax["values"]) > 1:
            sys.exit(f"{a.results}: axis {k + 1} ({ax['key']}) has {len(ax['values'])} values; "
                     "this plot shows two axes at most (fix the others to one value)")
    n0 = len(axes[0]["values"])
    cmp = None
    if a.compare:
        cmp = load_json(a.compare, ["axes", "points"], "a protwin sweep JSON of the same grid")
        if [x["labels"] for x in cmp["axes"]] != [x["labels"] for x in axes]:
            sys.exit(f"--compare {a.compare}: its axes differ from {a.results}'s")
    if a.x_labels:
        names = a.x_labels.split(",")
        if len(names) != n0:
            sys.exit(f"--x-labels: {len(names)} names for {n0} values of {axes[0]['key']}")
        xs, ticks = list(range(n0)), names
    else:
        xs, ticks = [first_key_value(v) for v in axes[0]["values"]], None
    only = set(a.series.split(",")) if a.series else None
    lines = series(res, only)
    if not lines:
        sys.exit(f"--series: none of {sorted(only)} is a value of {axes[1]['key']}: {axes[1]['labels']}")
    cmap = plt.get_cmap("viridis")
    styles = ["-", "--", ":", "-."]
    systems = list(dict.fromkeys(s for s, _, _ in lines))
    machine = MACHINE_LABEL.get(res["machine"], res["machine"])
    title = a.title or f"{res['model']} on {res['gpus']} × {machine}: best policy per point (simulated)"
    xlabel = a.x_title or axis_label(axes[0])
    # Knob lines overlap often; shift each series a little sideways so every marker shows.
    span = (max(xs) - min(xs)) if len(xs) > 1 else 1.0
    dodge = 0.012 * span if a.knobs else 0.0

    panels = KNOBS if a.knobs else [("tokens_per_s", "throughput (tokens/s, whole server)")]
    if a.knobs:
        fig, grid = plt.subplots(2, 3, figsize=(13, 8))
        flat = list(grid.flat)
    else:
        fig, ax0 = plt.subplots(figsize=(10.5, 5.5))
        flat = [ax0]
    # Series whose every plotted value is the same are drawn once, their labels joined (e.g. the
    # core counts past a saturation point).
    def ys(res_, s, j):
        pts = points_of(res_, s, j)
        return {key: [value(pts[i], key) if i in pts else None for i in range(n0)] for key, _ in panels}

    groups = []  # [(system, j, [labels], ys)]
    for s, j, lab in lines:
        y = ys(res, s, j)
        same = next((g for g in groups if g[0] == s and g[3] == y), None)
        if same:
            same[2].append(lab)
        else:
            groups.append((s, j, [lab], y))
    def joined(labs):
        if len(labs) == 1:
            return labs[0]
        head, _, _ = labs[0].rpartition("= ")
        return head + "= " + ", ".join(l.rpartition("= ")[2] for l in labs) + " (identical)"

    compared = False
    for (key, ylabel), ax in zip(panels, flat):
        for k, (s, j, labs, y) in enumerate(groups):
            off = (k - (len(groups) - 1) / 2) * dodge
            xv = [xs[i] + off for i in range(n0)]
            yv = [float("nan") if v is None else v for v in y[key]]
            col = cmap(0.9 * k / max(1, len(groups) - 1))
            ax.plot(xv, yv, styles[systems.index(s) % len(styles)], marker=SYSTEM_MARKER.get(s, "o"),
                    color=col, label=joined(labs), markersize=5)
            if cmp is not None and not a.knobs:
                yc = [float("nan") if v is None else v for v in ys(cmp, s, j)[key]]
                if yc != yv:
                    ax.plot(xv, yc, "--", marker="x", color=col, markersize=5, linewidth=1)
                    compared = True
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if ticks:
            ax.set_xticks(xs)
            ax.set_xticklabels(ticks)
        ax.grid(alpha=0.3)
        if a.knobs:
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if a.knobs:
        handles, labels = flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=9)
        fig.suptitle(title + "\n(chosen knobs; markers shifted sideways so overlapping series stay visible)",
                     fontsize=11)
    else:
        if compared:  # one legend entry for every dashed line
            flat[0].plot([], [], "--", marker="x", color="black", linewidth=1, label=a.compare_label)
        flat[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        flat[0].set_title(title, fontsize=10)
        missing = sum(1 for p in res["points"] if p["tokens_per_s"] is None)
        if missing:
            flat[0].text(0.01, 0.01, f"{missing} point(s) fit no policy (not drawn)", transform=flat[0].transAxes,
                         fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1) if a.knobs else None)
    save(fig, a.out)


if __name__ == "__main__":
    main()
