#!/usr/bin/python3
"""Quick mode of the experiments (issue 17), run by CTest: re-runs an experiment's driver
(experiments/NAME/run.py) with the current build in quick mode (experiments/_protwin.py), so that
every results file it would write is compared with the committed one instead: numbers within the
relative tolerance PROTWIN_QUICK_TOL (default 1e-6; the simulator is deterministic), timings
ignored. Exits 1 when a result moved, a protwin run failed or nothing was checked: a change of the
predictions then fails `make test` until the experiment is re-run and its results (and verdict,
which the driver derives from them) committed. The driver's own exit code (1 when its criterion is
missed) is printed, not judged: the committed results already carry that verdict.

usage: experiments/quick_check.py NAME [NAME ...]     (binary: $PROTWIN, see experiments/_protwin.py)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def check(name):
    driver = os.path.join(HERE, name, "run.py")
    if not os.path.isfile(driver):
        print(f"{name}: no run.py")
        return False
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "quick.jsonl")
        open(report, "w").close()
        env = dict(os.environ, PROTWIN_QUICK=report)
        p = subprocess.run(["/usr/bin/python3", driver], env=env, capture_output=True, text=True)
        with open(report) as f:
            entries = [json.loads(line) for line in f if line.strip()]
    failed = [e for e in entries if "failed" in e]
    files = [e for e in entries if "file" in e]
    moved = [e for e in files if e["count"] > 0]
    for e in failed:
        print(f"{name}: protwin {e['failed']} failed (exit code {e['exit_code']})")
    for e in moved:
        print(f"{name}: {e['file']}: {e['count']} difference(s) from the committed results:")
        for d in e["differences"]:
            print("    " + d)
    crashed = p.returncode not in (0, 1) or "Traceback" in p.stderr
    if crashed or not files:
        sys.stdout.write(p.stdout[-2000:])
        sys.stderr.write(p.stderr[-4000:])
    ok = not failed and not moved and not crashed and bool(files)
    print(f"{name}: {len(files)} results file(s) checked, {len(moved)} moved; driver exit code {p.returncode} "
          f"({'criterion met' if p.returncode == 0 else 'criterion missed, as committed'}): "
          f"{'OK' if ok else 'FAILED (re-run the experiment, review and commit its results)'}")
    return ok


def main():
    names = sys.argv[1:]
    if not names:
        sys.exit(__doc__)
    results = [check(n) for n in names]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
