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
    if QUICK:
        _quick_record({"failed": " ".join(map(str, args)), "exit_code": p.returncode})
    sys.exit(f"protwin {' '.join(map(str, args))}: exit code {p.returncode}")


def plot(script, *args):
    """Draws a figure with plots/SCRIPT (Debian's python3, as every plot script expects); not in quick mode."""
    if QUICK:
        return
    cmd = ["/usr/bin/python3", os.path.join(REPO, "plots", script)] + [str(a) for a in args]
    if subprocess.run(cmd, cwd=REPO).returncode != 0:
        sys.exit(f"plots/{script} failed")


def load_config(here):
    with open(os.path.join(here, "config.json")) as f:
        return json.load(f)


# Quick mode (issue 17; CTest runs it through experiments/quick_check.py): with PROTWIN_QUICK set to
# a report file, write_json and write_csv compare what the experiment would write with the committed
# file instead of writing it (numbers within PROTWIN_QUICK_TOL relative, default 1e-6; timings, the
# keys in VOLATILE, ignored) and append every check, and every failed protwin run, to the report.
# The ops a 4D simulation held at once (peak_live_ops*) are the simulator's own memory, not a
# prediction: ignored too.
QUICK = os.environ.get("PROTWIN_QUICK", "")
QUICK_TOL = float(os.environ.get("PROTWIN_QUICK_TOL", "1e-6"))
VOLATILE = {"wall_s", "total_wall_s", "seconds", "search_s", "search_seconds", "sweep_s", "compare_s", "peak_live_ops",
            "peak_live_ops_per_stage"}


def _quick_record(entry):
    with open(QUICK, "a") as f:
        f.write(json.dumps(entry) + "\n")


def _number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v) if isinstance(v, str) and v.strip() else None
    except ValueError:
        return None


def _differences(old, new, where, out):
    """Appends to `out` where `new` differs from `old` (numbers beyond QUICK_TOL relative)."""
    a, b = _number(old), _number(new)
    if a is not None and b is not None:
        if abs(a - b) > QUICK_TOL * max(abs(a), abs(b)) and abs(a - b) > 1e-12:
            out.append(f"{where}: committed {old}, now {new}")
    elif isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if k in VOLATILE:
                continue
            if k not in old or k not in new:
                out.append(f"{where}/{k}: {'new' if k not in old else 'gone'}")
            else:
                _differences(old[k], new[k], f"{where}/{k}", out)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append(f"{where}: {len(old)} entries committed, {len(new)} now")
        for i, (x, y) in enumerate(zip(old, new)):
            _differences(x, y, f"{where}/{i}", out)
    elif old != new:
        out.append(f"{where}: committed {old!r}, now {new!r}")


def _quick_check(path, new, load):
    rel = os.path.relpath(path, REPO)
    diffs = []
    if not os.path.exists(path):
        diffs.append("not committed")
    else:
        _differences(load(path), new, "", diffs)
    _quick_record({"file": rel, "differences": diffs[:20], "count": len(diffs)})
    print(f"quick: {rel}: " + ("same as committed" if not diffs else f"{len(diffs)} difference(s)"))


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_json(path, obj, indent=2, sort_keys=True):
    if QUICK:
        return _quick_check(path, json.loads(json.dumps(obj)), lambda p: json.load(open(p)))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=indent, sort_keys=sort_keys)
        f.write("\n")
    os.replace(tmp, path)
    print("wrote " + os.path.relpath(path, REPO))


def write_csv(path, rows, fields):
    if QUICK:
        new = [{k: ("" if r.get(k) is None else str(r.get(k))) for k in fields} for r in rows]
        return _quick_check(path, new, _read_csv)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})
    os.replace(tmp, path)
    print("wrote " + os.path.relpath(path, REPO))
