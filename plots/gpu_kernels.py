"""Predicted against measured GPU kernel times (experiments/gpu-kernels): one panel per measured
table (source and GPU), the scored half only; tables on (corrections interpolated from the
training half) and the shape-aware model alone.

usage: gpu_kernels.py results/predictions.json --out PREFIX   (writes PREFIX.png and PREFIX.svg)
"""
import argparse
import json
import math

from _style import plt, save

ap = argparse.ArgumentParser()
ap.add_argument("predictions")
ap.add_argument("--out", required=True)
a = ap.parse_args()
with open(a.predictions) as f:
    rows = json.load(f)
tables = []
for r in rows:
    if r["table"] not in tables:
        tables.append(r["table"])
cols = 4
nrows = math.ceil(len(tables) / cols)
fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3.8 * nrows), squeeze=False)
for ax, t in zip(axes.flat, tables):
    sel = [r for r in rows if r["table"] == t]
    meas = [r["measured_us"] for r in sel]
    ax.scatter(meas, [r["model_us"] for r in sel], s=6, alpha=0.5, color="#8c8c8c", label="model alone")
    ax.scatter(meas, [r["tables_us"] for r in sel], s=6, alpha=0.6, color="#c44e52", label="tables (training half)")
    lo, hi = min(meas + [r["model_us"] for r in sel]), max(meas + [r["model_us"] for r in sel])
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(f"{t} on {sel[0]['machine']}", fontsize=9)
    ax.set_xlabel("measured (µs)")
    ax.set_ylabel("predicted (µs)")
    ax.legend(fontsize=7, loc="upper left")
for ax in list(axes.flat)[len(tables):]:
    ax.axis("off")
fig.suptitle("GPU kernels, scored half (alternate shapes): predicted vs measured")
fig.tight_layout()
save(fig, a.out)
