#!/usr/bin/python3
"""Driver of the rank-accuracy experiment (issue 23). With RERUN=1 it first runs, for each model of
config.json (or of $MODELS), `protwin calibrate --model M` with config.json's `calibrate_args` and
`-o experiments/rank-accuracy/results/M`, its printed table kept in results/M/calibrate-output.txt
and one line per run appended to results/runs.jsonl. Then it tabulates the 2-rank cases of the
committed (or new) results into results/rank_accuracy.csv and their metrics into
results/rank_accuracy.json, prints every recorded run, and exits 1 when a model's latest run
misses a criterion (calibrate's verdicts, `rank_cases.criteria_met`; calibrate itself exits 3)."""
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import _protwin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STREAMS = ["compute", "h2d", "d2h", "collective", "cpu_optim"]
FIELDS = ["model", "system", "measured_s", "predicted_s", "error", "profile_blocks_predicted_s", "slowest_rank",
          "block_sensitivity"] + ["busy_error_" + s for s in STREAMS] + [
          "measured_peak_device_bytes", "predicted_peak_device_bytes", "peak_device_error", "analytic_peak_device_error"]


def calibrate(model, out, extra):
    args = ["calibrate", "--model", model, *extra, "-o", os.path.relpath(out, _protwin.REPO)]
    print("  protwin " + " ".join(args), flush=True)
    with open(os.path.join(out, "calibrate-output.txt"), "w") as log:
        p = subprocess.Popen([_protwin.binary()] + args, cwd=_protwin.REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
        code = p.wait()
    if code not in (0, 3):  # 3: a --ranks criterion missed, judged below
        sys.exit(f"protwin calibrate --model {model}: exit code {code}")
    return code


def summary_of(cal):
    s = cal["rank_cases"]
    out = {k: s.get(k) for k in ["metrics", "intervals", "verdicts", "criteria_met", "metrics_profile_blocks",
                                 "metrics_joint", "single_copy_permitted", "net_GBps"]}
    out["block_level_us"] = (s.get("block_probes") or {}).get("level_us")
    out["cases"] = [{"system": c["system"], "error": c.get("iteration_error"),
                     "busy_errors": {k: v["error"] for k, v in c.get("busy", {}).items()},
                     "peak_device_error": c["memory"]["gpu"]["error"] if "memory" in c else None,
                     "analytic_peak_device_error": c["memory"]["gpu"]["analytic_error"] if "memory" in c else None}
                    for c in s["cases"] if "measured_s" in c]
    return out


def line(model, s):
    m, ci, v = s["metrics"], s["intervals"], s["verdicts"]
    return ("%s: MAPE %.1f %% [%.1f, %.1f] (%s), max %.1f %% [%.1f, %.1f] (%s), Spearman %.2f [%.2f, %.2f] (%s); "
            "device peak MAPE %.1f %%, max %.1f %% (%s), ProTrain's analytic model MAPE %.1f %%" % (
                model, 100 * m["iteration_time_mape"], 100 * ci["iteration_time_mape"][0],
                100 * ci["iteration_time_mape"][1], v["iteration_time_mape"], 100 * m["iteration_time_max_error"],
                100 * ci["iteration_time_max_error"][0], 100 * ci["iteration_time_max_error"][1],
                v["iteration_time_max_error"], m["spearman"], ci["spearman"][0], ci["spearman"][1], v["spearman"],
                100 * m["peak_device_mape"], 100 * m["peak_device_max_error"], v["peak_device_max_error"],
                100 * m["analytic_peak_device_mape"]))


def main():
    cfg = _protwin.load_config(HERE)
    res = os.path.join(HERE, "results")
    models = os.environ.get("MODELS", "").split() or cfg["models"]
    rows, summary = [], {}
    for model in cfg["models"]:
        out = os.path.join(res, model)
        if os.environ.get("RERUN") == "1" and model in models:
            os.makedirs(out, exist_ok=True)
            code = calibrate(model, out, cfg["calibrate_args"])
        path = os.path.join(out, "calibration.json")
        if not os.path.exists(path) and os.environ.get("RERUN") == "1" and model not in models:
            print(f"{model}: no results yet (not in MODELS), left out")
            continue
        if not os.path.exists(path):
            sys.exit(f"{os.path.relpath(path, _protwin.REPO)} missing: run RERUN=1 {os.path.relpath(HERE, _protwin.REPO)}/run.sh")
        with open(path) as f:
            cal = json.load(f)
        if "metrics" not in cal.get("rank_cases", {}):
            sys.exit(f"{os.path.relpath(path, _protwin.REPO)}: no 2-rank metrics ({cal.get('rank_cases', {}).get('error')})")
        summary[model] = summary_of(cal)
        if os.environ.get("RERUN") == "1" and model in models:
            with open(os.path.join(res, "runs.jsonl"), "a") as f:
                f.write(json.dumps({"model": model, "finished": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
                                    "exit_code": code, "wall_s": cal.get("wall_s"), **summary[model]}) + "\n")
        for c in cal["rank_cases"]["cases"]:
            if "measured_s" not in c:
                continue
            g = c["memory"]["gpu"]
            r = {"model": model, "system": c["system"], "measured_s": c["measured_s"], "predicted_s": c["predicted_s"],
                 "error": c["iteration_error"], "profile_blocks_predicted_s": c.get("profile_blocks_predicted_s"),
                 "slowest_rank": (c.get("at_rank_blocks") or {}).get("slowest_rank"),
                 "block_sensitivity": (c.get("at_rank_blocks") or {}).get("block_sensitivity"),
                 "measured_peak_device_bytes": g["measured_bytes"], "predicted_peak_device_bytes": g["predicted_bytes"],
                 "peak_device_error": g["error"], "analytic_peak_device_error": g["analytic_error"]}
            for st in STREAMS:
                r["busy_error_" + st] = c["busy"][st]["error"] if st in c["busy"] else None
            rows.append(r)
    _protwin.write_json(os.path.join(res, "rank_accuracy.json"),
                        {"experiment": "rank-accuracy", "targets": cfg["targets"], "models": summary})
    _protwin.write_csv(os.path.join(res, "rank_accuracy.csv"), rows, FIELDS)
    runs = os.path.join(res, "runs.jsonl")
    if os.path.exists(runs):
        print("every recorded run (results/runs.jsonl):")
        with open(runs) as f:
            for ln in f:
                r = json.loads(ln)
                print("  %s %s" % (r["finished"], line(r["model"], r)))
    missed = []
    print("latest run per model:")
    for model, s in summary.items():
        print("  " + line(model, s))
        missed += ["%s %s (%s)" % (model, k, v) for k, v in s["verdicts"].items() if v != "met"]
    if missed:
        sys.exit("rank-accuracy: criteria not met: " + "; ".join(missed))


if __name__ == "__main__":
    main()
