"""Helpers shared by the experiments' drivers (experiments/*/run.py): find the protwin binary, run
it with --json and keep its answer, tell "does not fit" apart from a real failure, write CSV.

The binary is $PROTWIN (relative to the repository root unless absolute), default the Release
build's build/release/cli/protwin, as `make figures` passes it.
"""
import csv
import json
import os
import shlex
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Messages protwin prints (exit code 2) when a model or plan does not fit the machine, and when a
# hand-made knob setting is out of the model's range (more persistent chunks than it has, ...).
NOFIT_MARKERS = ("does not fit", "over capacity", "exceed GPU memory", "exceed host memory")
RANGE_MARKERS = ("valid range is", "must be in")


def binary():
    p = os.environ.get("PROTWIN", "build/release/cli/protwin")
    p = p if os.path.isabs(p) else os.path.join(REPO, p)
    if not os.access(p, os.X_OK):
        sys.exit(f"protwin binary not found at {p} (set PROTWIN, or `make build` first)")
    return p


def run(args, accept=()):
    """Runs `protwin ARGS` (ARGS should end with --json) from the repository root.

    Returns (json, wall_s, None) on success. If protwin exits with 2 and its message contains one of
    the strings in `accept` (e.g. NOFIT_MARKERS), returns (None, wall_s, message). Any other failure
    stops the experiment with protwin's message and exit code.
    """
    cmd = [binary()] + [str(a) for a in args]
    print("  protwin " + " ".join(shlex.quote(str(a)) for a in args), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode == 0:
        return json.loads(p.stdout), wall, None
    msg = p.stderr.strip().splitlines()[0] if p.stderr.strip() else "(no message)"
    if p.returncode == 2 and any(m in p.stderr for m in accept):
        print("    -> " + msg, flush=True)
        return None, wall, msg
    sys.stderr.write(p.stderr)
    sys.exit(f"protwin {' '.join(map(str, args))}: exit code {p.returncode}")


def plot(script, *args):
    """Draws a figure with plots/SCRIPT (Debian's python3, as every plot script expects)."""
    cmd = ["/usr/bin/python3", os.path.join(REPO, "plots", script)] + [str(a) for a in args]
    if subprocess.run(cmd, cwd=REPO).returncode != 0:
        sys.exit(f"plots/{script} failed")


def load_config(here):
    with open(os.path.join(here, "config.json")) as f:
        return json.load(f)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    print("wrote " + os.path.relpath(path, REPO))


def write_csv(path, rows, fields):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})
    os.replace(tmp, path)
    print("wrote " + os.path.relpath(path, REPO))
